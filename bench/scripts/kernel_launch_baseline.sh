#!/usr/bin/env bash
# Builds bench/baselines/kernel_launch.c with the C core (into
# build/bench/kernel_launch, again only when a source is newer) and runs it:
# the launch rate of the tiny benchmark kernel through a plain loop of the
# runtime's own launch call (with --driver c-function, of the CUDA driver
# API's cuLaunchKernel; with --driver c-backend, of the hip backend's
# kernel_launch), from T threads each on a stream of its own. Arguments go
# to the program:
#   --threads T --launches N [--driver c-runtime|c-function|c-backend]
# Prints one JSON line. Needs gcc and a GPU with its runtime and compiler.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=build/bench/kernel_launch
if [ ! -x "$bin" ] || [ -n "$(find csrc hrx/include bench/baselines/kernel_launch.c \
    -name '*.[ch]' -newer "$bin" | head -1)" ]; then
  mkdir -p "$(dirname "$bin")"
  gcc -O2 -std=c11 -Wall -Wextra -D_GNU_SOURCE -pthread -Icsrc/include \
    -Icsrc -Ihrx/include \
    bench/baselines/kernel_launch.c \
    csrc/base/*.c csrc/core/*.c csrc/drivers/*.c csrc/drivers/host/*.c csrc/drivers/hip/*.c \
    csrc/drivers/fault/*.c csrc/bench/bench_kernel_sources.c -ldl -o "$bin"
fi
"$bin" "$@"
