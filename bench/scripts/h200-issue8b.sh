#!/usr/bin/env bash
# Issue 8 (bad input, model-based random programs, load) on the GPU machine,
# hip backend, in two calls of the device tool (each under 10 minutes):
#   stage 1: install; the bad-input catalogue (tests/test_bad_input.py);
#            the model-based random programs, thorough profile
#            (tests/test_model_random.py; needs hypothesis, see below);
#   stage 2: the full-size load: 64 threads x 10,000 commands at queue
#            counts 1, 2, 4, 8, 16, batching on and off, one fresh process
#            each (tests/test_load.py; same install, warm machine).
# Logs go to $OUT (default ./h200-out); each ends with the figures.
#
# hypothesis is not part of the GPU machine's image, and the machine cannot
# reach PyPI. If `import hypothesis` fails, the script installs the wheels
# from ./wheels when present (pure Python; make them here with
#   python3 -m pip download --no-deps -d wheels hypothesis sortedcontainers
# and pass `carry: ["wheels"]`), else step 2 is skipped and says so.
#   bash bench/scripts/h200-issue8b.sh 1; bash bench/scripts/h200-issue8b.sh 2
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONSAFEPATH=1          # import the installed hrx, not ./hrx
export HRX_BACKEND=hip HRX_TEST_BACKENDS=hip
stage=${1:-1}
if [ "$stage" = 2 ]; then
  cd tests
  {
    echo "\$ HRX_BACKEND=hip HRX_TEST_BACKENDS=hip HRX_LOAD_COMMANDS=10000 python3 -m pytest -q -p no:cacheprovider test_load.py"
    HRX_LOAD_COMMANDS=10000 HRX_LOAD_TIMEOUT=200 timeout 560 \
      python3 -m pytest -q -p no:cacheprovider test_load.py
    echo "exit status $?"
  } >"$OUT/issue8b-load.log" 2>&1
  tail -n 4 "$OUT/issue8b-load.log"
  exit 0
fi
{
  date -u; nvidia-smi -L; python3 --version
  python3 -m pip install --no-build-isolation --no-deps . 2>&1 | tail -2
  if ! python3 -c "import hypothesis" 2>/dev/null && [ -d wheels ]; then
    python3 -m pip install --no-index --find-links wheels hypothesis 2>&1 | tail -2
  fi
  python3 -c "import hypothesis; print('hypothesis', hypothesis.__version__)" \
    || echo "hypothesis missing: the random programs are skipped"
} >"$OUT/issue8b-setup.log" 2>&1

cd tests
{
  echo "\$ HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -q -p no:cacheprovider test_bad_input.py"
  timeout 120 python3 -m pytest -q -p no:cacheprovider test_bad_input.py
  echo "exit status $?"
} >"$OUT/issue8b-bad-input.log" 2>&1

if python3 -c "import hypothesis" 2>/dev/null; then
  {
    echo "\$ HRX_BACKEND=hip HRX_TEST_BACKENDS=hip HRX_HYPOTHESIS_PROFILE=thorough python3 -m pytest -q -p no:cacheprovider test_model_random.py"
    HRX_HYPOTHESIS_PROFILE=thorough timeout 420 \
      python3 -m pytest -q -p no:cacheprovider test_model_random.py
    echo "exit status $?"
  } >"$OUT/issue8b-model.log" 2>&1
fi

tail -n 4 "$OUT"/issue8b-*.log
