#!/usr/bin/env bash
# GPU checks of issue 7 part 1 (graphs, host callbacks, completions) in one
# call on the H200 (device tool). Logs go to $OUT (default ./h200-out):
#   h200-issue7a-setup.log        install
#   h200-issue7a-graphs.log       graph conformance + bad-input rows on hip
#   h200-issue7a-hip-device.log   the hip device test, incl. native graphs,
#                                 LaunchHostFunc and the graph-vs-copies time
#   h200-issue7a-suite.log        the whole conformance suite on hip
# Usage: bash bench/scripts/h200-issue7a.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# Import the installed hrx, not ./hrx (sources without the built extension).
export PYTHONSAFEPATH=1
{
  date -u; nvidia-smi -L; python3 --version
  python3 -m pip install --no-build-isolation --no-deps . 2>&1 | tail -3
} >"$OUT/h200-issue7a-setup.log" 2>&1

cd tests
HRX_BACKEND=hip HRX_TEST_BACKENDS=hip timeout 200 python3 -m pytest -q \
  -p no:cacheprovider -rs test_graph.py test_bad_input.py -k "graph or \
completion" >"$OUT/h200-issue7a-graphs.log" 2>&1
echo "exit status $?" >>"$OUT/h200-issue7a-graphs.log"
cd ..
make -s -f tests/c/hip.mk hip-device >"$OUT/h200-issue7a-hip-device.log" 2>&1
echo "exit status $?" >>"$OUT/h200-issue7a-hip-device.log"
cd tests
HRX_BACKEND=hip HRX_TEST_BACKENDS=hip timeout 240 python3 -m pytest -q \
  -p no:cacheprovider . >"$OUT/h200-issue7a-suite.log" 2>&1
echo "exit status $?" >>"$OUT/h200-issue7a-suite.log"
tail -3 "$OUT"/h200-issue7a-*.log
