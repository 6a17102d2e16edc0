#!/usr/bin/env bash
# CI for the hip backend's AMD binding on a machine without an AMD GPU
# (fresh Debian bookworm, run as root): checks every declared HIP constant and
# prototype against the real ROCm headers, then loads the real libamdhip64
# and expects a clean "no device" refusal.
set -euo pipefail

cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  gcc libc6-dev make libamdhip64-dev libamdhip64-5 >/dev/null

make -f tests/c/hip.mk hip-constants
make -f tests/c/hip.mk hip-load
