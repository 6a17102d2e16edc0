#!/bin/bash
# Host backend sweeps of two builds taken in turn, one repeat of each at a
# time, so that both see the same load on a shared machine.
#
#   BEFORE=/path/to/python-with-the-old-hrx AFTER=/path/to/python-with-this-hrx \
#     bash bench/scripts/host_engine_sweeps.sh [OUTDIR]
#
# Each interpreter must import the hrx to measure (an installed package, or
# PYTHONPATH set in BEFORE_ENV / AFTER_ENV, e.g. AFTER_ENV=PYTHONPATH=$PWD).
# Writes OUTDIR (default bench/results/host-2core)/engines-{before,after}-
# {quick,default}.jsonl, their tables and the targets of both presets.
set -euo pipefail
: "${BEFORE:?the interpreter of the build to compare against}"
: "${AFTER:?the interpreter of the build to measure}"
out=$(realpath "${1:-bench/results/host-2core}")
scripts=$(realpath "$(dirname "$0")")
work=$(mktemp -d)
cd "$work"   # no hrx source tree on the children's path
sweep() {  # sweep WHO ARGS...
  local who=$1; shift
  if [ "$who" = before ]; then
    env ${BEFORE_ENV:-} "$BEFORE" -P -m hrx.bench sweep --backend host --no-progress "$@"
  else
    env ${AFTER_ENV:-} "$AFTER" -P -m hrx.bench sweep --backend host --no-progress "$@"
  fi
}
for rep in 1 2 3; do
  resume=(); [ "$rep" -gt 1 ] && resume=(--resume)
  for who in before after; do
    sweep $who --driver native,python --quick --repeats $rep "${resume[@]}" \
      -o "$out/engines-$who-quick.jsonl" > /dev/null
  done
done
# The reference protocol's sizes: builds with --preset pick quick sizes on
# the host backend unless told; older ones know only the reference sizes.
reference() {  # reference WHO: the flag that selects them, if any
  if sweep "$1" --help | grep -q -- --preset; then echo "--preset reference"; fi
}
for who in before after; do
  sweep $who --driver native --samples 5 --repeats 1 $(reference $who) \
    -o "$out/engines-$who-default.jsonl" > /dev/null
done
# The reports are written with -o beside their .jsonl: each names on its
# first line the command that writes it again from there.
cd "$out"
for preset in quick default; do
  for who in before after; do
    env ${AFTER_ENV:-} "$AFTER" -P -m hrx.bench table \
      "engines-$who-$preset.jsonl" -o "engines-$who-$preset-table.txt"
  done
  env ${AFTER_ENV:-} "$AFTER" -P "$scripts/host_engine_targets.py" \
    "engines-before-$preset.jsonl" "engines-after-$preset.jsonl" \
    -o "engines-$preset-targets.txt"
done
rm -rf "$work"
