#!/bin/sh
# The figures the reliability tests report, from the output of one
# `make test` (docs/reliability.md says what each counts):
#
#   make test 2>&1 | tee make-test.log
#   sh bench/scripts/reliability_figures.sh make-test.log \
#     > bench/results/host-2core/reliability-figures.txt
#
# Prints the C fault test's own summary and pytest's "reliability figures"
# of the whole suite, after a header naming the code (the checkout's HEAD,
# or $COMMIT) and the machine ($MACHINE).
set -eu
log=${1:?the output of make test}
commit=${COMMIT:-$(git rev-parse --short HEAD)}
echo "# command: make test 2>&1 | tee make-test.log; sh bench/scripts/reliability_figures.sh make-test.log"
echo "# code: $commit; ${MACHINE:-the shared 2-core development machine (no GPU), other jobs running}"
echo
echo "tests/c/test_fault (the plain build):"
awk '/== .*\/tests\/c\/build\/test_fault$/ {f = 1; next} f && /^==/ {exit} f' "$log" |
  grep -v '^ok '
echo
echo "pytest, the whole suite (reliability figures):"
awk 'f && (/^=/ || /^[0-9]+ (passed|failed)/) {exit} f {print}
     /=+ reliability figures =+/ {f = 1}' "$log"
