#!/usr/bin/env bash
# On the GPU machine (H200), one call: the GPU tests of the Python-threads
# and stream-API work, then the small-copy benchmark of Python threads (hrx's
# python driver at 8 queues with 1 and 16 threads, 3 fresh processes, beside
# PyTorch and CuPy streams with 16 Python threads, in the same run).
# Logs and results go to $OUT (default ./h200-out).
#   bash bench/scripts/h200-python-threads.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONSAFEPATH=1   # import the installed hrx, not ./hrx
# Always reinstall: a warm machine may hold an hrx built from other sources.
python3 -m pip install --no-build-isolation --no-deps . >"$OUT/python-threads-setup.log" 2>&1
TESTS="test_interop_cupy.py test_interop_torch.py test_interop_native.py \
test_stream_api.py test_stream_threads.py test_dlpack.py test_stream_ops.py \
test_event_ordering.py test_graph.py"
{
  date -u; nvidia-smi -L; python3 --version; git log -1 --format='commit %H' 2>/dev/null
  python3 -c "import torch, cupy; print('torch', torch.__version__, 'cupy', cupy.__version__)" 2>&1
  python3 -c "import numba; print('numba', numba.__version__)" 2>&1 | tail -1
  echo "command: cd tests && HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -q -rs -p no:cacheprovider $TESTS"
  (cd tests && HRX_BACKEND=hip HRX_TEST_BACKENDS=hip timeout 300 python3 -m pytest -q -rs \
     -p no:cacheprovider $TESTS)
  echo "exit status $?"
  echo "command: make -f tests/c/hip.mk hip-constants-cuda hip-device"
  timeout 120 make -f tests/c/hip.mk hip-constants-cuda hip-device 2>&1 | tail -n 8
} >"$OUT/h200-python-threads-tests.log" 2>&1
{
  echo "command: python3 -P bench/scripts/python_threads.py --backend hip --queues 8 --repeat 3 --output h200-python-threads.jsonl"
  timeout 420 python3 -P bench/scripts/python_threads.py --backend hip --queues 8 \
    --repeat 3 --output "$OUT/h200-python-threads.jsonl"
  echo "exit status $?"
} >"$OUT/h200-python-threads.txt" 2>&1
tail -n 3 "$OUT/h200-python-threads-tests.log"; cat "$OUT/h200-python-threads.txt"
