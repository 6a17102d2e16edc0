#!/usr/bin/env bash
# Submission batching on the GPU machine (device tool, H200), one call per
# stage (each fits the tool's 10-minute limit):
# stage 1: install; the default sweep with the native driver, batching on
#          and off (3 ordered repeats, fresh processes), table, comparison;
# stage 2: the same sweep with the python driver, batching on and off;
# stage 3: the hip device test (batch kernel against a host model) and the
#          conformance suite on the hip backend with batching on, then the
#          runtime's conformance tests with it off.
# Logs and results go to $OUT (default ./h200-out).
#   bash bench/scripts/h200-batching.sh 1   (then 2, then 3)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONSAFEPATH=1   # import the installed hrx, not ./hrx
stage=${1:-1}
python3 -m pip install --no-build-isolation --no-deps . >"$OUT/batching-setup-$stage.log" 2>&1
if [ "$stage" = 1 ]; then
  timeout 570 python3 -m hrx.bench sweep --backend hip --driver native \
    --batching on,off --no-progress --output "$OUT/h200-batching.jsonl" \
    >"$OUT/h200-batching-sweep.log" 2>&1
  echo "exit status $?" >>"$OUT/h200-batching-sweep.log"
  python3 -m hrx.bench table "$OUT/h200-batching.jsonl" >"$OUT/h200-batching-table.txt" 2>&1
  python3 -m hrx.bench compare "$OUT/h200-batching.jsonl" --baseline batching-off \
    >"$OUT/h200-batching-compare.txt" 2>&1
  exit 0
fi
if [ "$stage" = 2 ]; then
  timeout 570 python3 -m hrx.bench sweep --backend hip --driver python \
    --batching on,off --no-progress \
    --output "$OUT/h200-batching-python.jsonl" >"$OUT/h200-batching-python-sweep.log" 2>&1
  echo "exit status $?" >>"$OUT/h200-batching-python-sweep.log"
  python3 -m hrx.bench table "$OUT/h200-batching-python.jsonl" \
    >"$OUT/h200-batching-python-table.txt" 2>&1
  python3 -m hrx.bench compare "$OUT/h200-batching-python.jsonl" --baseline batching-off \
    >"$OUT/h200-batching-python-compare.txt" 2>&1
  exit 0
fi
{
  make -s -f tests/c/hip.mk hip-device 2>&1 | tail -4
  cd tests
  echo "command: HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -q -p no:cacheprovider ."
  HRX_BACKEND=hip HRX_TEST_BACKENDS=hip timeout 150 python3 -m pytest -q \
    -p no:cacheprovider . 2>&1 | tail -8
  echo "command: HRX_BATCHING=0 HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -q -p no:cacheprovider test_pool_contract.py test_stream_ops.py test_event_ordering.py test_bad_input.py test_batching.py"
  HRX_BATCHING=0 HRX_BACKEND=hip HRX_TEST_BACKENDS=hip timeout 100 python3 -m pytest -q \
    -p no:cacheprovider test_pool_contract.py test_stream_ops.py test_event_ordering.py \
    test_bad_input.py test_batching.py 2>&1 | tail -4
} >"$OUT/h200-batching-conformance.log" 2>&1
