#!/usr/bin/env bash
# The session's recorded GPU runs (device tool, H200), one call per stage,
# each within the tool's 10-minute limit. Logs and results go to $OUT.
#   bench: the batching sweeps (native; python too with WITH_PYTHON=1; on
#          and off) and the
#          loaded-latency probes at 8 and 16 queues with 8, 32 and
#          hrx-managed connections (bench/scripts/h200-batching.sh 1 and 2,
#          bench/scripts/h200-issue6.sh);
#   tests: the hip device test and the whole suite on the hip backend, then
#          the runtime's conformance files with batching off;
#   extra: the example compute workload sweep (h200-issue7b.sh 2) and the
#          64-thread load test (h200-issue8b.sh 2).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONSAFEPATH=1   # import the installed hrx, not ./hrx
stage=${1:-bench}
start=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps . >"$OUT/final-setup-$stage.log" 2>&1
# hypothesis for the random-program tests (the machine has no network):
# wheels/ may carry it, downloaded beforehand with pip download.
if [ -d wheels ] && ! python3 -c "import hypothesis" 2>/dev/null; then
  python3 -m pip install --no-index --find-links wheels hypothesis \
    >>"$OUT/final-setup-$stage.log" 2>&1
fi
case "$stage" in
  bench)
    OUT="$OUT" bash bench/scripts/h200-batching.sh 1
    [ -n "${WITH_PYTHON:-}" ] && OUT="$OUT" bash bench/scripts/h200-batching.sh 2
    OUT="$OUT" REPEATS=2 bash bench/scripts/h200-issue6.sh
    ;;
  tests)
    {
      echo "\$ make -s -f tests/c/hip.mk hip-device"
      timeout 60 make -s -f tests/c/hip.mk hip-device 2>&1 | tail -12
      cd tests
      echo "\$ HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -q -rs -p no:cacheprovider ."
      HRX_BACKEND=hip HRX_TEST_BACKENDS=hip timeout 330 python3 -m pytest -q -rs \
        -p no:cacheprovider . 2>&1 | tail -40
      echo "\$ HRX_BATCHING=0 HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -q -p no:cacheprovider (conformance files)"
      HRX_BATCHING=0 HRX_BACKEND=hip HRX_TEST_BACKENDS=hip timeout 120 python3 -m pytest -q \
        -p no:cacheprovider test_pool_contract.py test_stream_ops.py test_event_ordering.py \
        test_bad_input.py test_batching.py test_graph.py 2>&1 | tail -6
    } >"$OUT/h200-final-tests.log" 2>&1
    ;;
  extra)
    OUT="$OUT" bash bench/scripts/h200-issue7b.sh 2
    [ -f bench/scripts/h200-issue8b.sh ] && OUT="$OUT" bash bench/scripts/h200-issue8b.sh 2
    ;;
esac
echo "stage $stage took $(( $(date +%s) - start )) s" >>"$OUT/final-setup-$stage.log"
# The device tool brings back at most 8 files: pack everything into one.
(cd "$OUT" && tar czf "../h200-final-$stage.tgz" . && rm -rf ./* \
  && mv "../h200-final-$stage.tgz" .)
