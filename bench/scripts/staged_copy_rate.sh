#!/usr/bin/env bash
# Builds and runs bench/scripts/staged_copy_rate.c against the core's staged
# copier: the host-memory copy rate of staged transfers by copy-thread count,
# streaming stores against memcpy. Needs only a C compiler.
#
#   bash bench/scripts/staged_copy_rate.sh [MiB [repeats [threads,...]]]
set -euo pipefail
cd "$(dirname "$0")/../.."
binary=$(mktemp)
trap 'rm -f "$binary"' EXIT
"${CC:-cc}" -std=c11 -D_GNU_SOURCE -O2 -pthread -Icsrc -Icsrc/include \
  -o "$binary" bench/scripts/staged_copy_rate.c csrc/core/staged_transfer.c \
  csrc/base/streaming_copy.c csrc/base/environment.c csrc/base/status.c
echo "# command: bash bench/scripts/staged_copy_rate.sh $*"
"$binary" "$@"
