#!/usr/bin/env bash
# Issue 6 on the GPU machine (device tool, H200), in one call of about 4
# minutes: install; the lanes/reserved/policy/stats/connection-budget
# contract tests on the hip backend; the hip device test; then the benchmark
# (default protocol, native driver, which times the loaded-latency probe on a
# round-robin stream, a high-priority stream, a reserved stream and a
# reserved high-priority stream) at queue counts 8 and 16, with
# CUDA_DEVICE_MAX_CONNECTIONS=8, =32 and unset (hrx sizes it: 28 at 8 queues,
# 32 at 16), each (count, connections, repeat) in a fresh process.
# Logs and results go to $OUT (default ./h200-issue6-out):
#   issue6-setup.log, issue6-tests.log, issue6.jsonl, issue6-table.txt,
#   issue6-by-connections.txt
#   bash bench/scripts/h200-issue6.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-issue6-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# Import the installed hrx, not ./hrx (sources without the built extension).
export PYTHONSAFEPATH=1
unset CUDA_DEVICE_MAX_CONNECTIONS HRX_CONNECTION_BUDGET_SET
REPEATS=${REPEATS:-2}
start=$(date +%s)
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 --version
  python3 -m pip install --no-build-isolation --no-deps . 2>&1 | tail -3
  python3 -c "import hrx, json; print(json.dumps(hrx.backends(), indent=1))"
} >"$OUT/issue6-setup.log" 2>&1

{
  echo "\$ cd tests && HRX_BACKEND=hip HRX_TEST_BACKENDS=hip pytest test_pool_lanes.py test_errors_hierarchy.py"
  (cd tests && HRX_BACKEND=hip HRX_TEST_BACKENDS=hip timeout 150 \
    python3 -m pytest -q -p no:cacheprovider test_pool_lanes.py \
      test_errors_hierarchy.py 2>&1 | tail -40)
  echo "\$ make -s -f tests/c/hip.mk hip-device"
  timeout 60 make -s -f tests/c/hip.mk hip-device 2>&1 | tail -20
  echo "exit status $?"
} >"$OUT/issue6-tests.log" 2>&1
echo "tests done after $(( $(date +%s) - start )) s" >>"$OUT/issue6-setup.log"

# One JSON line per process; the variable is set (or unset) per process, so
# the CUDA context of each run is created with it.
: >"$OUT/issue6.jsonl"
for repeat in $(seq 1 "$REPEATS"); do
  for queues in 8 16; do
    for connections in 8 32 unset; do
      if [ "$connections" = unset ]; then
        env -u CUDA_DEVICE_MAX_CONNECTIONS timeout 120 python3 -m hrx.bench \
          run "$queues" --backend hip --repeat "$repeat" \
          >>"$OUT/issue6.jsonl" 2>>"$OUT/issue6-runs.log"
      else
        CUDA_DEVICE_MAX_CONNECTIONS=$connections timeout 120 python3 -m \
          hrx.bench run "$queues" --backend hip --repeat "$repeat" \
          >>"$OUT/issue6.jsonl" 2>>"$OUT/issue6-runs.log"
      fi
      echo "q$queues c$connections r$repeat: exit $? at $(( $(date +%s) - start )) s" \
        >>"$OUT/issue6-runs.log"
    done
  done
done

# All lines together, then one table per connection budget (the lines do
# not say it in their group key, so they are split by environment.connections).
python3 -m hrx.bench table "$OUT/issue6.jsonl" >"$OUT/issue6-table.txt" 2>&1
python3 - "$OUT" >"$OUT/issue6-by-connections.txt" 2>&1 <<'PY'
import json, os, sys
from hrx.bench.results import Results
out = sys.argv[1]
lines = [json.loads(t) for t in open(os.path.join(out, "issue6.jsonl")) if t.strip()]
by = {}
for line in lines:
    c = (line.get("environment") or {}).get("connections") or {}
    by.setdefault(f"{c.get('variable')}={c.get('value')} ({c.get('source')})", []).append(line)
for label, group in sorted(by.items()):
    print(f"# {label}: {len(group)} runs\n")
    print(Results(group).table(analysis=False))
PY
echo "all done after $(( $(date +%s) - start )) s" >>"$OUT/issue6-setup.log"
