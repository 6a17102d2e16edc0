#!/usr/bin/env bash
# Everything recorded on the GPU machine in one call (device tool, H200):
# stage 1: install, the conformance suite on the hip backend, the hip device
#          test, the submission-cost baseline;
# stage 2: the sweep with the native and raw drivers (same install, warm);
# stage 3: the sweep with the python driver.
# Each stage fits the device tool's 10-minute call. Logs and results go to
# $OUT (default ./h200-out).
#   bash bench/scripts/h200.sh 1; bash bench/scripts/h200.sh 2; ... 3
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# Import the installed hrx, not ./hrx (sources without the built extension).
export PYTHONSAFEPATH=1
stage=${1:-1}
if [ "$stage" = 2 ]; then
  # The main job, default protocol, three ordered repeats, fresh processes:
  # the native driver and the raw baseline.
  timeout 540 python3 -m hrx.bench sweep --backend hip --driver native,raw \
    --no-progress --output "$OUT/h200.jsonl" >"$OUT/h200-sweep.log" 2>&1
  python3 -m hrx.bench table "$OUT/h200.jsonl" >"$OUT/h200-table.txt" 2>&1
  exit 0
fi
if [ "$stage" = 3 ]; then
  timeout 540 python3 -m hrx.bench sweep --backend hip --driver python \
    --no-progress --output "$OUT/h200-python.jsonl" \
    >"$OUT/h200-python-sweep.log" 2>&1
  exit 0
fi
{
  date -u; nvidia-smi; python3 --version
  python3 -m pip install --no-build-isolation --no-deps . 2>&1 | tail -3
} >"$OUT/h200-setup.log" 2>&1

run() { echo "\$ $*"; "$@"; echo "exit status $?"; }
{
  echo "command: cd tests && HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -q -p no:cacheprovider ."
  cd tests && HRX_BACKEND=hip HRX_TEST_BACKENDS=hip \
    timeout 200 python3 -m pytest -q -p no:cacheprovider . 2>&1 | tail -60
  cd ..
  run make -s -f tests/c/hip.mk hip-device
} >"$OUT/h200-conformance.log" 2>&1

bash bench/scripts/submission_cost.sh hip >"$OUT/h200-submission-cost.json" \
  2>&1
