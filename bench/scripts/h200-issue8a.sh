#!/usr/bin/env bash
# Issue 8 (fault injection, lifetimes and fork, Ctrl-C during waits) on the
# GPU machine, hip backend, in one call of the device tool. Logs go to $OUT
# (default ./h200-out):
#   issue8a-setup.log   install
#   issue8a-hip.log     fault injection above hip, Ctrl-C during hip waits
#                       (4 GiB device copies), fork with a hip device, and the
#                       conformance files that exercise the timed waits that
#                       every Python synchronize now uses
#   bash bench/scripts/h200-issue8a.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONSAFEPATH=1  # import the installed hrx, not ./hrx
{
  date -u; nvidia-smi -L; python3 --version
  python3 -m pip install --no-build-isolation --no-deps . 2>&1 | tail -3
} >"$OUT/issue8a-setup.log" 2>&1
cd tests
HRX_TEST_BACKENDS=hip timeout 500 python3 -m pytest -q -p no:cacheprovider \
  -rs test_fault_injection.py test_interrupt.py test_lifetimes.py \
  test_stream_ops.py test_event_ordering.py test_pool_contract.py \
  >"$OUT/issue8a-hip.log" 2>&1
echo "pytest exit status $?" >>"$OUT/issue8a-hip.log"
