#!/usr/bin/env bash
# Issue 7 parts 2-5 on the GPU machine (device tool, H200), one call each:
# stage 1: install; DLPack, native-handle interop (NVRTC kernel through the
#          CUDA driver API; torch if present) and bad-input tests on hip;
# stage 2: the queue-pool sweep with the example compute workload
#          (bench/examples/kernel_workload.py: NVRTC kernels without torch),
#          its table and plot.
# Logs and results go to $OUT (default ./h200-out).
#   bash bench/scripts/h200-issue7b.sh 1; bash bench/scripts/h200-issue7b.sh 2
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONSAFEPATH=1   # import the installed hrx, not ./hrx
stage=${1:-1}
# Always reinstall: a warm machine may hold an hrx built from other sources.
python3 -m pip install --no-build-isolation --no-deps . >"$OUT/issue7b-setup-$stage.log" 2>&1
if [ "$stage" = 2 ]; then
  timeout 540 python3 -m hrx.bench sweep --backend hip \
    --workload bench/examples/kernel_workload.py:round \
    --no-progress --output "$OUT/h200-workload.jsonl" >"$OUT/h200-workload-sweep.log" 2>&1
  echo "exit status $?" >>"$OUT/h200-workload-sweep.log"
  python3 -m hrx.bench table "$OUT/h200-workload.jsonl" >"$OUT/h200-workload-table.txt" 2>&1
  python3 -m hrx.bench plot "$OUT/h200-workload.jsonl" --out "$OUT/h200-workload.png" \
    >>"$OUT/h200-workload-table.txt" 2>&1
  exit 0
fi
{
  date -u; nvidia-smi -L; python3 --version
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.is_available())" 2>&1
  python3 -c "
import sys; sys.path.insert(0, 'bench/examples')
import hrx, cuda_kernels
d = hrx.Device.open(0, backend='hip')
print('device', d.info['name'], d.info['platform'], d.info['target'])
print('nvrtc/driver:', cuda_kernels.available(d) or 'available', cuda_kernels._nvrtc_candidates()[:3])
" 2>&1
  echo "command: cd tests && HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -q -rs -p no:cacheprovider test_interop_native.py test_interop_torch.py test_dlpack.py test_bad_input.py test_stream_ops.py test_bench_workload.py"
  cd tests && HRX_BACKEND=hip HRX_TEST_BACKENDS=hip timeout 400 python3 -m pytest -q -rs \
    -p no:cacheprovider test_interop_native.py test_interop_torch.py test_dlpack.py \
    test_bad_input.py test_stream_ops.py test_bench_workload.py 2>&1 | tail -40
} >"$OUT/h200-issue7b-tests.log" 2>&1
