#!/usr/bin/env bash
# Builds bench/baselines/submission_cost.c with the C core and runs it on the
# given backend (default hip). Prints one JSON line.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(mktemp -d)
gcc -O2 -std=c11 -Wall -Wextra -D_GNU_SOURCE -pthread -Icsrc/include \
  -Icsrc -Ihrx/include \
  bench/baselines/submission_cost.c \
  csrc/base/*.c csrc/core/*.c csrc/drivers/*.c csrc/drivers/host/*.c csrc/drivers/hip/*.c \
  csrc/drivers/fault/*.c -ldl \
  -o "$out/submission_cost"
"$out/submission_cost" "${1:-hip}"
