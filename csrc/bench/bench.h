/* The queue-pool benchmark driver: one call runs every timed case of the
 * reference protocol (reference/queue-pool-measurements.md, "Reproduction")
 * for one device and returns raw durations. Statistics are computed by the
 * caller (hrx.bench); nothing here summarises.
 *
 * Cases, in run order, each with `warmup` unrecorded rounds followed by
 * `samples` recorded ones:
 *   stream creation  the first `retained_streams` pool streams (one value);
 *   small            one thread, small_copies copies per small lane,
 *                    round-robin over the lanes, then every lane is
 *                    synchronized (one duration per round);
 *   threaded         one thread per small lane, released together; the
 *                    round lasts from the common release to the end of the
 *                    slowest thread (one duration per round);
 *   bulk             bulk_copies copies per bulk lane, round-robin, then every
 *                    bulk lane is synchronized (one duration per round);
 *   idle latency     one small copy + synchronize of that lane, at every lane
 *                    position (lanes samples per round);
 *   loaded latency   loaded_copies bulk copies queued on every bulk lane, then
 *                    one timed small copy + synchronize, then the backlog is
 *                    drained untimed (lanes samples per round);
 *   loaded probes    (native driver, loaded_probes) the loaded-latency case
 *                    again, with the timed copy on a probe stream of its own
 *                    instead of a small lane: one on the high-priority lane,
 *                    one on a reserved queue, one on a reserved high-priority
 *                    queue (HRX_BENCH_PROBE_*), each with its own 4 KiB-class
 *                    buffers (small_bytes), created after the other cases.
 *                    The bulk lanes stay on the round-robin normal lane.
 *   contention       (bench_contention.h) kernel concurrency, latency behind
 *                    a compute backlog and behind a transfer backlog, with
 *                    probes on a round-robin stream and on the three probe
 *                    streams above; both drivers.
 * A 64-byte output prefix of every destination is checked at the end, and
 * every kernel output counts the launches that wrote it.
 *
 * Threading: hrx_bench_run blocks and may be called from any thread; it
 * starts `lanes` worker threads of its own for the threaded case and joins
 * them before returning. None of them touches Python.
 */
#ifndef HRX_CORE_BENCH_H_
#define HRX_CORE_BENCH_H_

#include <stddef.h>
#include <stdint.h>

#include "hrx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hrx_bench_driver_e {
  /* Through the public API: pool streams, hrx_stream_copy, ... */
  HRX_BENCH_DRIVER_NATIVE = 0,
  /* Straight to the backend vtable: native queues created by the driver
   * itself, logical stream k on native queue k mod queue_count as the pool
   * would map it, no hrx stream layer. The pool is not touched. Its numbers
   * are the baseline that shows what the pool/stream layer costs. */
  HRX_BENCH_DRIVER_RAW = 1,
} hrx_bench_driver_t;

/* Limits checked by hrx_bench_run (INVALID_ARGUMENT beyond them). */
#define HRX_BENCH_MAX_LANES 1024
#define HRX_BENCH_MAX_STREAMS 65536        /* retained_streams */
#define HRX_BENCH_MAX_COPIES (1 << 24)     /* each *_copies field */
#define HRX_BENCH_MAX_ROUNDS 65536         /* warmup, samples */
#define HRX_BENCH_MAX_BYTES (1ull << 40)   /* small_bytes, bulk_bytes,
                                              transfer_bytes */
#define HRX_BENCH_MAX_SPIN_NS 1000000000ull /* kernel_spin_ns: 1 s */
#define HRX_BENCH_MAX_BLOCKS (1 << 30)     /* backlog_blocks (and the
                                              device's max_grid_dim.x) */

/* Every count must be in [1, its maximum]. */
typedef struct hrx_bench_config_s {
  hrx_bench_driver_t driver;
  int lanes;              /* small lanes = bulk lanes = worker threads */
  int retained_streams;   /* empty streams kept alive for the whole run */
  uint64_t small_bytes;   /* per small copy */
  int small_copies;       /* per small lane per round */
  uint64_t bulk_bytes;    /* per bulk copy */
  int bulk_copies;        /* per bulk lane per round */
  int loaded_copies;      /* per bulk lane per loaded-latency sample */
  int warmup;             /* unrecorded rounds per case */
  int samples;            /* recorded rounds per case */
  bool loaded_probes;     /* run the loaded-probe variants (native only) */
  /* The contention cases (bench_contention.h), run when `contention`: */
  bool contention;
  uint64_t kernel_spin_ns;  /* each block of a spin kernel, >= 1 */
  int kernel_launches;      /* concurrency case: launches per round */
  int backlog_blocks;       /* grid of one compute-backlog kernel */
  int backlog_kernels;      /* compute-backlog kernels per bulk lane */
  uint64_t transfer_bytes;  /* one transfer of the transfer backlog */
  int transfer_copies;      /* transfers per bulk lane and direction */
  int compute_samples;      /* recorded samples per compute probe series */
  int transfer_samples;     /* recorded samples per transfer probe series */
} hrx_bench_config_t;

/* The loaded-latency probe variants. */
typedef enum hrx_bench_probe_e {
  HRX_BENCH_PROBE_HIGH = 0,          /* priority "high", shared lane slot */
  HRX_BENCH_PROBE_RESERVED = 1,      /* reserve, priority "normal" */
  HRX_BENCH_PROBE_RESERVED_HIGH = 2, /* reserve, priority "high" */
  HRX_BENCH_PROBE_COUNT = 3,
} hrx_bench_probe_t;
/* "high", "reserved", "reserved_high"; NULL otherwise. */
const char* hrx_bench_probe_name(int probe);

/* The probe streams of the contention cases: a round-robin small lane, then
 * the three loaded-probe variants (index = hrx_bench_probe_t + 1). */
#define HRX_BENCH_CONTENTION_KINDS (HRX_BENCH_PROBE_COUNT + 1)
/* "round_robin", "high", "reserved", "reserved_high"; NULL otherwise. */
const char* hrx_bench_contention_kind_name(int kind);

/* The timed operations of the contention cases. */
typedef enum hrx_bench_contention_op_e {
  HRX_BENCH_OP_COMPUTE_KERNEL = 0,  /* 1-block kernel behind kernels */
  HRX_BENCH_OP_COMPUTE_COPY = 1,    /* small copy behind kernels */
  HRX_BENCH_OP_TRANSFER_READ = 2,   /* small read behind large reads */
  HRX_BENCH_OP_TRANSFER_UPLOAD = 3, /* small upload behind large uploads */
  HRX_BENCH_OP_COUNT = 4,
} hrx_bench_contention_op_t;
/* "compute_kernel", "compute_copy", "transfer_read", "transfer_upload";
 * NULL otherwise. */
const char* hrx_bench_contention_op_name(int op);

/* The reference protocol: 16 lanes, 16 retained streams, 1024 copies of
 * 4 KiB, 16 copies of 32 MiB, 4 loaded copies, 3 warm-up rounds, 15 samples,
 * native driver; plus the loaded probes; and the contention cases' GPU
 * sizes (hrx/bench/config.py DEFAULT holds the same values). */
void hrx_bench_config_default(hrx_bench_config_t* out_config);

/* "native" / "raw"; NULL for an unknown value. */
const char* hrx_bench_driver_name(hrx_bench_driver_t driver);
/* Inverse of hrx_bench_driver_name; false (out unchanged) if unknown. */
bool hrx_bench_driver_parse(const char* name, hrx_bench_driver_t* out_driver);

/* Raw durations in nanoseconds (hrx_now_ns, monotonic). All arrays are owned
 * by the result and freed by hrx_bench_result_free. */
typedef struct hrx_bench_result_s {
  hrx_bench_config_t config;  /* as run */
  int queue_count;            /* the device's pool size during the run */
  /* Native queues the run used: min(queue_count, retained_streams +
   * 2 * lanes). */
  int queues_used;
  uint64_t stream_creation_ns;
  int rounds;                 /* == config.samples */
  uint64_t* small_round_ns;   /* [rounds] */
  uint64_t* threaded_round_ns;/* [rounds] */
  uint64_t* bulk_round_ns;    /* [rounds] */
  size_t latency_samples;     /* rounds * lanes; index = round * lanes + lane */
  uint64_t* idle_sample_ns;   /* [latency_samples] */
  uint64_t* loaded_sample_ns; /* [latency_samples] */
  /* [latency_samples] per hrx_bench_probe_t; all NULL when the probes did
   * not run (raw driver, or config.loaded_probes false). */
  uint64_t* loaded_probe_sample_ns[HRX_BENCH_PROBE_COUNT];
  /* Contention cases (bench_contention.h). Concurrency: per round,
   * kernel_launches spin kernels on one small lane, and the same number
   * round-robin over every small lane, each round up to every lane's
   * synchronize. */
  uint64_t* kernel_one_lane_round_ns;  /* [rounds] */
  uint64_t* kernel_lanes_round_ns;     /* [rounds] */
  /* All NULL when the cases did not run (config.contention false).
   * [op][kind]: compute ops have compute_samples entries, transfer ops
   * transfer_samples; sample s of kind round_robin used small lane
   * s mod lanes. */
  uint64_t* contention_sample_ns[HRX_BENCH_OP_COUNT]
                                [HRX_BENCH_CONTENTION_KINDS];
  /* Work per round, for rates: */
  uint64_t small_copies_per_round;   /* lanes * small_copies (also threaded) */
  uint64_t bulk_copies_per_round;    /* lanes * bulk_copies */
  uint64_t bulk_bytes_per_round;     /* bulk_copies_per_round * bulk_bytes */
} hrx_bench_result_t;

/* Runs the whole benchmark on `device` (borrowed), whose pool size the caller
 * has already set. For the native driver the retained streams should be the
 * device's first pool streams, so that stream creation includes creating the
 * pool's queues lazily; the run leaves its pool queues created. Blocks for
 * the whole run.
 *
 * Errors: INVALID_ARGUMENT for a NULL argument or a config field out of
 * range; DEVICE_ERROR when the output check finds a wrong byte (the message
 * names the lane and the byte); otherwise the failing call's status. Every
 * stream, queue, buffer and thread the run made is released on every path;
 * *out_result is written only on success and is owned by the caller. */
hrx_status_t hrx_bench_run(hrx_device_t* device,
                           const hrx_bench_config_t* config,
                           hrx_bench_result_t** out_result);

/* Frees the result and its arrays; NULL is a no-op. */
void hrx_bench_result_free(hrx_bench_result_t* result);

#ifdef __cplusplus
}
#endif

#endif /* HRX_CORE_BENCH_H_ */
