#!/usr/bin/env bash
# Everything recorded on the H200 (hip backend on the CUDA runtime), by named
# stage. Give one or more stages; they run in order after one install:
#
#   bash bench/scripts/h200.sh STAGE [STAGE...]
#
#   sweep-drivers    the main job through every driver: the default sweep
#                    (3 ordered repeats, fresh processes, batching on) of the
#                    native, raw and python drivers in one run, with the
#                    contention cases; table, comparison against raw, plot
#                    (about 6 minutes)
#   sweep            the default sweep, native driver, batching
#                    on and off (3 ordered repeats, fresh processes); table,
#                    batching on/off comparison, plot
#   sweep-raw        native driver against the raw baseline, batching off:
#                    what the stream layer costs; table, comparison, plot
#   sweep-python     the default sweep through the Python API, batching on
#                    and off; table, comparison
#   connections      the loaded-latency probes (round-robin, high priority,
#                    reserved, reserved + high) at 8 and 16 queues with
#                    CUDA_DEVICE_MAX_CONNECTIONS=8, =32 and left to hrx, each
#                    (count, budget, repeat) in a fresh process ($REPEATS, 2);
#                    the table, and one table per budget
#   connections-hrx  the same with the budget left to hrx only
#   workload         the sweep with the example compute workload
#                    (bench/examples/kernel_workload.py:round); table, plot
#   submission-cost  host time of one 4 KiB copy through hrx against a plain
#                    runtime loop (bench/scripts/submission_cost.sh hip)
#   quick-batching   one-minute batching check (h200_quick_batching.py)
#   read-latency     a 64-byte read_blocking idle and beside another stream's
#                    64 x 1 GiB backlog, against an idle copy + synchronize;
#                    then a device's first read against the 20 after it,
#                    each in a fresh process (10 of them)
#                    (bench/scripts/read_latency.py)
#   call-latency     the call-latency tail beside a thread that floods a
#                    stream: worst and p99 of record_event, query and
#                    synchronize of an idle stream and of calls on the
#                    flooded stream, batching on and off, 10 fresh processes
#                    each (bench/scripts/call_latency_tail.py; target: every
#                    idle-stream call at most 1 ms in every process)
#   python-threads   small copies from 1 and 16 Python threads: the python
#                    driver at 8 queues (5 fresh processes, each giving its
#                    one-thread and 16-thread rates) beside PyTorch and CuPy
#                    streams, in one run (python_threads.py), then how many
#                    submissions released the GIL in each case (the testing
#                    build counts them; about 4 minutes in all)
#   kernel-launch-rate  tiny-kernel launches per second: hrx from 1 and 16
#                    Python threads and from C, beside CuPy RawKernel,
#                    PyTorch and the plain C loops (the runtime's launch
#                    call from 1 and 16 threads, cuLaunchKernel from 16);
#                    then steps per second of the 21-launch step workload
#                    through hrx, CuPy and a replayed CuPy graph; 5
#                    interleaved repeats (kernel_launch_rate.py; about 2
#                    minutes)
#   launch-delays    the one-thread tiny-kernel row and the step rows again
#                    at batch delays (HRX_BATCH_DELAY_US) of 20, 100, 500
#                    and 2000 us, then at 20 us with batches held for a
#                    busy queue (HRX_BATCH_HOLD_US 1000 and 10000), 3
#                    repeats each, in launch-delays.txt: whether fewer,
#                    larger gathered batches (the step rows' "per batch"
#                    column) bring the step closer to the replayed graph
#                    (kernel_launch_rate.py --row; about 3 minutes)
#   host-bandwidth   first the host copy rate of staged transfers by copy
#                    threads, streaming stores against memcpy, no device
#                    (staged_copy_rate.sh, in staged-copy-rate.txt; seconds);
#                    then host-to-device and device-to-host bandwidth, 64 KiB
#                    to 1 GiB: hrx from pageable (numpy) and pinned memory
#                    (upload, read_into, read().wait()), the pageable rows
#                    again with the copy threads off and with cached copies,
#                    beside CuPy and PyTorch; 5 interleaved repeats; table in
#                    host-bandwidth.txt, JSON lines in host-bandwidth.jsonl
#                    (host_bandwidth.py; about 3 minutes)
#   chunking         a 4 KiB high-priority probe behind 16 x 64 MiB reads
#                    (then uploads) on a normal stream, chunking off against
#                    chunk sizes 1-16 MiB x windows 1-4 chunks, a fresh
#                    process each; table and JSON lines in chunking.txt;
#                    then the same from pinned memory, in
#                    chunking-pinned.txt (bench/scripts/h200_chunking.py;
#                    about 5 minutes)
#   chunking-queues  the same probe with chunking off and at the defaults,
#                    at pool sizes 1, 2, 4, 8 and 16, a fresh process each,
#                    in chunking-queues.txt, then the same from pinned
#                    memory in chunking-queues-pinned.txt: the probe's
#                    target and the backlog's rate at every queue count
#                    (about 3 minutes)
#   conformance      the hip device test and the CUDA header checks, then
#                    the whole Python suite on hip (batching on, small
#                    transfer chunks: make conformance-chunking) but for the
#                    python_only tests (plots, notebook, packaging: CI's);
#                    SHARD=k/n runs only every n-th test file from the k-th,
#                    to spread the suite over n calls
#   conformance-off  the conformance files on hip with batching and transfer
#                    chunking off (the
#                    test stages run against the testing build of the
#                    extension, made in build/testing after the install:
#                    make testing-build)
#   selected         the tests named by $TESTS (pytest arguments, relative
#                    to tests/) on hip against the testing build, e.g. to
#                    re-run what a conformance stage reported failed
#   before-after     the default sweep (native driver, batching on) at 4, 8
#                    and 16 queues of two builds taken in turn, a repeat of
#                    each at a time: this tree against the source tree in
#                    $BEFORE_TREE (e.g. `git archive COMMIT | tar -x -C
#                    before`, carried with the tree), with the medians and
#                    ranges side by side (before_after.py); $REPEATS
#                    repeats of each (default 3)
#   model-random     the bad-input catalogue and the model-based random
#                    programs on hip ($PROFILE, default thorough; needs
#                    hypothesis, see below)
#   load             64 threads x 10,000 commands at queue counts 1-16,
#                    batching on and off, one fresh process each
#
# On a machine with two GPUs (nvidia-h200-x2), with both visible:
#   multi-gpu        the copy paths between the devices, the tests of several
#                    devices (copies between devices both ways, a wait for
#                    another device's event, per-device pools), then the
#                    conformance files on hip, where the foreign-device cases
#                    use the second GPU (testing build, as conformance)
#   multi-gpu-sweep  the default sweep of every device in turn (--device all)
#   multi-gpu-concurrent  the default sweep with each step on every device at
#                    once, one process per device (--concurrent-devices)
#
# Each stage fits the device tool's 10-minute call on its own; sweep-raw,
# sweep-python, workload, model-random and load take most of one each.
# Files are named as under bench/results/h200/ (each stage writes the files
# bench/README.md's stage table names, and the tables and comparisons are
# written with -o in $OUT, so the command each one names on its first line
# runs again beside its .jsonl) and written to $OUT (default
# ./h200-out), with one log per stage (<stage>.log, setup.log); at the end
# everything in $OUT is packed into $OUT/h200_<stages>.tgz, since the device
# tool brings back only a few files.
#
# hypothesis is not in the GPU machine's image and the machine cannot reach
# PyPI: make wheels here with
#   python3 -m pip download --no-deps -d wheels hypothesis sortedcontainers
# and carry ./wheels; they are installed when `import hypothesis` fails.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONSAFEPATH=1   # import the installed hrx, not ./hrx (no extension there)
STAGES="sweep-drivers sweep sweep-raw sweep-python connections connections-hrx workload submission-cost \
quick-batching read-latency call-latency python-threads kernel-launch-rate \
launch-delays host-bandwidth chunking chunking-queues conformance conformance-off \
selected before-after model-random load multi-gpu multi-gpu-sweep multi-gpu-concurrent"
if [ $# -eq 0 ]; then
  echo "usage: bash bench/scripts/h200.sh STAGE [STAGE...]; stages: $STAGES" >&2
  exit 2
fi
for stage in "$@"; do
  case " $STAGES " in
    *" $stage "*) ;;
    *) echo "unknown stage '$stage'; stages: $STAGES" >&2; exit 2 ;;
  esac
done

bench() { python3 -m hrx.bench "$@"; }
# The reports of a results file NAME.jsonl in $OUT: its table, with a
# BASELINE its comparison, with PLOT=plot its plot (the pages name a PNG for
# sweep-raw and workload only). Written in $OUT with -o, so that each names
# the command that writes it again beside its .jsonl.
reports() {
  local name=$1 baseline=$2 plot=$3
  (cd "$OUT" || exit
   bench table "$name.jsonl" -o "$name-table.txt"
   if [ -n "$baseline" ]; then
     bench compare "$name.jsonl" --baseline "$baseline" -o "$name-compare.txt"
   fi
   if [ -n "$plot" ]; then
     bench plot "$name.jsonl" --out "$name.png" || echo "no plot (matplotlib?)"
   fi)
}
# One sweep and its reports: NAME BASELINE PLOT SWEEP-ARGS...
sweep_stage() {
  local name=$1 baseline=$2 plot=$3; shift 3
  timeout 570 python3 -m hrx.bench sweep --backend hip --no-progress \
    --output "$OUT/$name.jsonl" "$@"
  echo "sweep exit status $?"
  reports "$name" "$baseline" "$plot"
}

# One transfer-pacing calibration table: FILE LIMIT ARGS... runs
# h200_chunking.py on hip with ARGS into $OUT/FILE (LIMIT seconds at most;
# 0: no limit) and shows the table, without its JSON lines, in the log.
chunking_table() {
  local file=$1 limit=$2
  shift 2
  timeout "$limit" python3 -P bench/scripts/h200_chunking.py --backend hip \
    "$@" >"$OUT/$file"
  echo "exit status $?"; grep -v '^{' "$OUT/$file"
}

# The probes at 8 and 16 queues for each budget: NAME BUDGET...
connections() {
  unset CUDA_DEVICE_MAX_CONNECTIONS HRX_CONNECTION_BUDGET_SET
  local name=$1 file="$OUT/$1.jsonl" repeat queues budget
  shift
  : >"$file"
  # The variable is set (or left to hrx) per process: the runtime reads it
  # once, when it initializes.
  for repeat in $(seq 1 "${REPEATS:-2}"); do
    for queues in 8 16; do
      for budget in "$@"; do
        if [ "$budget" = hrx ]; then
          timeout 120 python3 -m hrx.bench run "$queues" --backend hip \
            --repeat "$repeat" >>"$file"
        else
          CUDA_DEVICE_MAX_CONNECTIONS=$budget timeout 120 python3 -m hrx.bench \
            run "$queues" --backend hip --repeat "$repeat" >>"$file"
        fi
        echo "queues $queues, connections $budget, repeat $repeat: exit status $?"
      done
    done
  done
  reports "$name" "" ""
}

# The Python tests on hip, against the testing build. Each test has 90 s
# (pytest-timeout, in the GPU image): a hang names its test and the rest run.
# $WORKERS > 1 spreads the tests over that many processes (pytest-xdist, in
# the GPU image), each with its own live devices.
hip_pytest() {
  HRX_BACKEND=hip HRX_TEST_BACKENDS=hip timeout 560 python3 -m pytest -q -rfEs \
    -p no:cacheprovider -p timeout --timeout 90 \
    $([ "${WORKERS:-1}" -gt 1 ] && echo "-p xdist -n $WORKERS") "$@"
}

conformance() (
  export PYTHONPATH=$PWD/build/testing
  echo "\$ make -s -f tests/c/hip.mk hip-device hip-constants-cuda"
  # All of it: the device test prints its timings (graph launch, tiny launches).
  timeout 90 make -s -f tests/c/hip.mk hip-device hip-constants-cuda 2>&1
  cd tests || return
  # Small transfer chunks, so that the suites' larger transfers are paced.
  export $(make -s -C .. conformance-chunking)
  # SHARD=k/n: only every n-th test file from the k-th (1-based), so that
  # the suite can be spread over n calls when one does not hold it.
  local files=.
  if [ -n "${SHARD:-}" ]; then
    files=$(find . -name 'test_*.py' | sort |
      awk -v k="${SHARD%/*}" -v n="${SHARD#*/}" '(NR - k) % n == 0')
  fi
  echo "\$ $(make -s -C .. conformance-chunking) HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -q -rfEs --durations=20 -m 'not python_only' ${SHARD:+(shard $SHARD: }$(echo $files)${SHARD:+)} (batching on)"
  hip_pytest --durations=20 -m "not python_only" $files
)

conformance_off() (
  export PYTHONPATH=$PWD/build/testing
  cd tests || return
  echo "\$ HRX_BATCHING=0 HRX_CHUNKING=0 HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -q -rfEs (conformance files)"
  HRX_BATCHING=0 HRX_CHUNKING=0 hip_pytest $(make -s -C .. conformance-tests)
)

selected() (
  export PYTHONPATH=$PWD/build/testing
  cd tests || return
  echo "\$ HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -q -rfEs ${TESTS:?}"
  hip_pytest ${TESTS:?}
)

# Two builds' sweeps in turn, so that both see the same machine: the before
# tree is installed under a directory of its own and put first on PYTHONPATH.
before_after() {
  local before=/tmp/hrx-before repeat who
  rm -rf "$before"
  python3 -m pip install --no-build-isolation --no-deps --target "$before" \
    "${BEFORE_TREE:?a source tree to compare against}" 2>&1 | tail -2
  for repeat in $(seq "${REPEATS:-3}"); do
    for who in before after; do
      # An empty PYTHONPATH adds nothing: the installed hrx. The first repeat
      # starts each file; later ones resume it with one more repeat.
      PYTHONPATH=$([ "$who" = before ] && echo "$before") timeout 200 \
        python3 -m hrx.bench sweep --backend hip --no-progress --queues 4,8,16 \
        --repeats "$repeat" $([ "$repeat" -gt 1 ] && echo --resume) \
        --output "$OUT/before-after-$who.jsonl" >/dev/null
      echo "$who, repeat $repeat: exit status $?"
    done
  done
  python3 bench/scripts/before_after.py "$OUT/before-after-before.jsonl" \
    "$OUT/before-after-after.jsonl" >"$OUT/before-after.txt" 2>&1
  cat "$OUT/before-after.txt"
}

model_random() (
  export PYTHONPATH=$PWD/build/testing
  cd tests || return
  export HRX_BACKEND=hip HRX_TEST_BACKENDS=hip
  echo "\$ HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -q -p no:cacheprovider test_bad_input.py"
  timeout 120 python3 -m pytest -q -p no:cacheprovider test_bad_input.py 2>&1 | tail -6
  if python3 -c "import hypothesis" 2>/dev/null; then
    echo "\$ HRX_HYPOTHESIS_PROFILE=${PROFILE:-thorough} ... pytest -q -p no:cacheprovider test_model_random.py"
    HRX_HYPOTHESIS_PROFILE=${PROFILE:-thorough} timeout 420 \
      python3 -m pytest -q -p no:cacheprovider test_model_random.py 2>&1 | tail -8
  else
    echo "hypothesis missing: the random programs did not run"
  fi
)

multi_gpu() (
  export PYTHONPATH=$PWD/build/testing
  cd tests || return
  nvidia-smi topo -m
  HRX_BACKEND=hip python3 -c "import hrx; i = hrx.Device.open(0).info; \
print(i['device_count'], 'devices; copy paths from device 0:', i['peer'])"
  echo "\$ HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -v -rfEs test_multi_device.py test_event_ordering.py -k device"
  hip_pytest -v test_multi_device.py test_event_ordering.py -k device 2>&1 | tail -30
  echo "\$ HRX_BACKEND=hip HRX_TEST_BACKENDS=hip python3 -m pytest -q -rfEs (conformance files, two devices)"
  hip_pytest $(make -s -C .. conformance-tests) 2>&1 | tail -30
)

load() (
  export PYTHONPATH=$PWD/build/testing
  cd tests || return
  echo "\$ HRX_BACKEND=hip HRX_TEST_BACKENDS=hip HRX_LOAD_COMMANDS=10000 python3 -m pytest -q -p no:cacheprovider test_load.py"
  HRX_BACKEND=hip HRX_TEST_BACKENDS=hip HRX_LOAD_COMMANDS=10000 HRX_LOAD_TIMEOUT=200 \
    timeout 560 python3 -m pytest -q -p no:cacheprovider test_load.py 2>&1 | tail -12
)

start=$(date +%s)
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; python3 --version
  # Always reinstall: a warm machine may hold an hrx built from other sources.
  python3 -m pip install --no-build-isolation --no-deps . 2>&1 | tail -3
  # The test stages import the testing build (fault injection, test hooks).
  case " $* " in
    *" conformance "*|*" conformance-off "*|*" selected "*|*" model-random "*|*" load "*|*" multi-gpu "*|*" python-threads "*)
      make -s testing-build PY=python3 2>&1 | tail -3 ;;
  esac
  if ! python3 -c "import hypothesis" 2>/dev/null && [ -d wheels ]; then
    python3 -m pip install --no-index --find-links wheels hypothesis 2>&1 | tail -2
  fi
  python3 -c "import hrx, json; print(json.dumps(hrx.backends(), indent=1))"
} >"$OUT/setup.log" 2>&1

for stage in "$@"; do
  case "$stage" in
    sweep-drivers) sweep_stage sweep-drivers raw plot --driver native,raw,python --batching on ;;
    sweep)        sweep_stage sweep batching-off "" --driver native --batching on,off ;;
    sweep-raw)    sweep_stage sweep-raw raw plot --driver native,raw --batching off ;;
    sweep-python) sweep_stage sweep-python batching-off "" --driver python --batching on,off ;;
    workload)     sweep_stage workload "" plot \
                    --workload bench/examples/kernel_workload.py:round ;;
    connections)
      connections connections-probes 8 32 hrx
      # One table per budget: the groups do not tell budgets apart.
      (cd "$OUT" && bench table connections-probes.jsonl --split-by connections --brief \
         -o connections-by-budget.txt) ;;
    connections-hrx) connections connections-hrx-budget hrx ;;
    submission-cost)
      bash bench/scripts/submission_cost.sh hip >"$OUT/submission-cost.json"
      echo "exit status $?" ;;
    quick-batching)
      python3 -P bench/scripts/h200_quick_batching.py >"$OUT/quick-batching.txt"
      echo "exit status $?" ;;
    chunking)
      chunking_table chunking.txt 0
      chunking_table chunking-pinned.txt 0 --memory pinned ;;
    chunking-queues)
      chunking_table chunking-queues.txt 330 --settings off,default \
        --queues 1,2,4,8,16
      chunking_table chunking-queues-pinned.txt 200 --memory pinned \
        --settings off,default --queues 1,2,4,8,16 ;;
    read-latency)
      python3 -P bench/scripts/read_latency.py --backend hip \
        --backlog-bytes 1073741824 --backlog-copies 64 >"$OUT/read-latency.txt"
      echo "exit status $?" ;;
    call-latency)
      timeout 560 python3 -P bench/scripts/call_latency_tail.py --backend hip \
        >"$OUT/call-latency-tail.txt"
      echo "exit status $?" ;;
    python-threads)
      timeout 540 python3 -P bench/scripts/python_threads.py --backend hip \
        --queues 8 --repeat 5 --gil-releases build/testing \
        --output "$OUT/python-threads.jsonl" >"$OUT/python-threads.txt"
      echo "exit status $?" ;;
    kernel-launch-rate)
      timeout 540 python3 -P bench/scripts/kernel_launch_rate.py --backend hip \
        --launches 100000 --output "$OUT/kernel-launch-rate.json" \
        >"$OUT/kernel-launch-rate.txt"
      echo "exit status $?" ;;
    launch-delays)
      : >"$OUT/launch-delays.txt"
      for setting in 20:0 100:0 500:0 2000:0 20:1000 20:10000; do
        HRX_BATCH_DELAY_US=${setting%:*} HRX_BATCH_HOLD_US=${setting#*:} \
          timeout 200 python3 -P bench/scripts/kernel_launch_rate.py \
          --backend hip --launches 100000 --repeat 3 \
          --row 'hrx python, 1 thread' --row 'step, ' \
          >>"$OUT/launch-delays.txt"
        echo "exit status $? (delay:hold $setting)"
      done ;;
    host-bandwidth)
      timeout 60 bash bench/scripts/staged_copy_rate.sh 256 5 0,1,2,4,8,15 \
        >"$OUT/staged-copy-rate.txt"
      echo "exit status $?"; cat "$OUT/staged-copy-rate.txt"
      timeout 450 python3 -P bench/scripts/host_bandwidth.py --backend hip \
        --single-thread-copies --cached-copies \
        --output "$OUT/host-bandwidth.jsonl" >"$OUT/host-bandwidth.txt"
      echo "exit status $?"; grep -v '^{' "$OUT/host-bandwidth.txt" ;;
    conformance)  conformance ;;
    conformance-off) conformance_off ;;
    selected)     selected ;;
    before-after) before_after ;;
    model-random) model_random ;;
    load)         load ;;
    multi-gpu)    multi_gpu ;;
    multi-gpu-sweep) sweep_stage multi-gpu-sweep "" "" --device all --driver native ;;
    multi-gpu-concurrent)
      sweep_stage multi-gpu-concurrent "" "" --device all --concurrent-devices \
        --driver native ;;
  esac >"$OUT/$stage.log" 2>&1
  echo "$stage done after $(( $(date +%s) - start )) s" >>"$OUT/setup.log"
done

archive="h200_$(IFS=_; echo "$*").tgz"
(cd "$OUT" && tar czf "../$archive" . && rm -rf ./* && mv "../$archive" .)
echo "results in $OUT/$archive"
