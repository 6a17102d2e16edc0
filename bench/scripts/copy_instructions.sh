#!/usr/bin/env bash
# Instructions the core spends per submitted copy, counted by valgrind's
# callgrind: the inclusive instruction count of hrx_stream_copy divided by
# its calls, in one native-driver run on the host backend (8 queues,
# batching on, small sizes). The count does not depend on the machine's
# load, so it compares builds of the submission path on a noisy machine;
# it is not a time (see the sweeps for those).
#
#   bash bench/scripts/copy_instructions.sh LABEL=DIR [LABEL=DIR ...]
#
# Each DIR holds an installed hrx (e.g. `pip install --no-build-isolation
# --no-deps --target DIR SOURCE`); it is put first on PYTHONPATH. Needs
# valgrind (apt-get install valgrind). Prints one line per build.
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: bash bench/scripts/copy_instructions.sh LABEL=DIR [LABEL=DIR ...]" >&2
  exit 2
fi
# The interpreter itself, not a wrapper script (pyenv's shims are shell
# scripts, which valgrind would trace instead).
python=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"   # no source tree on the path
for spec in "$@"; do
  label=${spec%%=*}
  dir=$(realpath "${spec#*=}")
  PYTHONPATH=$dir valgrind --tool=callgrind --callgrind-out-file="$work/$label.out" \
    "$python" -P -m hrx.bench run 8 2 --backend host --small-copies 256 \
    --bulk-bytes 65536 --bulk-copies 4 --loaded-copies 2 --warmup 1 \
    >/dev/null 2>"$work/$label.err" || { tail -5 "$work/$label.err" >&2; exit 1; }
  # The caller tree's line for hrx_stream_copy: "<inclusive> ... (<calls>x)".
  callgrind_annotate --threshold=100 --inclusive=yes --tree=caller \
    "$work/$label.out" 2>/dev/null |
    awk -v label="$label" '
      /< .*:hrx_bench_native_copy \(/ && !done {
        gsub(",", "", $1); calls = $0
        sub(/.*\(/, "", calls); sub(/x\).*/, "", calls); gsub(",", "", calls)
        printf "%s: %.0f instructions per hrx_stream_copy (%d calls)\n",
               label, $1 / calls, calls
        done = 1
      }
      END { if (!done) { print label ": hrx_stream_copy not found" > "/dev/stderr"; exit 1 } }'
done
