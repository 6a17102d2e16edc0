/* The state of one benchmark run (bench.c), shared by the files of its
 * cases (bench_contention.c). Internal to csrc/bench. */
#ifndef HRX_BENCH_BENCH_RUN_H_
#define HRX_BENCH_BENCH_RUN_H_

#include <stdbool.h>
#include <stdint.h>

#include "hal/device.h"
#include "bench.h"
#include "hrx.h"

typedef struct hrx_bench_s hrx_bench_t;

/* Bytes of every destination compared with the expected pattern. */
#define HRX_BENCH_CHECK_BYTES 64


/* One logical stream with its own source and destination. Small lanes have
 * ids [0, lanes), bulk lanes [lanes, 2 * lanes). */
typedef struct hrx_bench_lane_s {
  int id;
  const char* kind;            /* "small" / "bulk" (static) */
  int index;                   /* position among lanes of its kind */
  hrx_stream_t* stream;        /* native driver: retained; raw: NULL */
  hrx_native_queue_t* queue;   /* raw driver: borrowed from bench->queues */
  hrx_buffer_t* src;           /* retained */
  hrx_buffer_t* dst;           /* retained */
  hrx_view_t src_view;         /* whole src */
  hrx_view_t dst_view;         /* whole dst */
  void* src_ptr;               /* native addresses, used by the raw driver */
  void* dst_ptr;
  uint64_t bytes;              /* size of src and dst, and of one copy */
  /* Contention cases (bench_contention.c); NULL / 0 until made. */
  bool owns_queue;             /* raw probe: queue is owned, not a slot */
  hrx_buffer_t* counter;       /* retained: kernel output, a word a block */
  uint64_t launched;           /* kernels launched with `counter` */
  hrx_buffer_t* transfer;      /* retained: bulk lanes, transfer_bytes */
  void* host;                  /* owned host_alloc block: bulk lanes
                                  transfer_bytes, probes small_bytes */
  hrx_readback_t** readbacks;  /* native bulk lanes: owned
                                  [transfer_copies], each owned or NULL */
} hrx_bench_lane_t;

/* What differs between the drivers. The timed loops only call `copy` and
 * `sync`, through this table in both drivers, so their shape is identical.
 * All may be called from several threads at once on different lanes. */
typedef struct hrx_bench_ops_s {
  /* Logical stream `index` in pool order; lane NULL means a retained one. */
  hrx_status_t (*open_stream)(hrx_bench_t* bench, int index,
                              hrx_bench_lane_t* lane);
  /* lane->src -> lane->dst, whole length. */
  hrx_status_t (*copy)(hrx_bench_t* bench, hrx_bench_lane_t* lane);
  /* Blocks until the lane's submitted work is done ("stream synchronize";
   * for raw, its native queue's synchronize). */
  hrx_status_t (*sync)(hrx_bench_t* bench, hrx_bench_lane_t* lane);
  hrx_status_t (*fill)(hrx_bench_t* bench, hrx_bench_lane_t* lane,
                       hrx_buffer_t* buffer, uint8_t byte);
  /* Writes data into the first `length` bytes of buffer. */
  hrx_status_t (*upload)(hrx_bench_t* bench, hrx_bench_lane_t* lane,
                         hrx_buffer_t* buffer, const void* data,
                         uint64_t length);
  /* Blocks; reads the first `length` (<= HRX_BENCH_CHECK_BYTES) bytes. */
  hrx_status_t (*read)(hrx_bench_t* bench, hrx_bench_lane_t* lane,
                       hrx_buffer_t* buffer, void* out, uint64_t length);
} hrx_bench_ops_t;

/* One run's state. Owned by hrx_bench_run's frame; every pointer field is
 * NULL until made, so teardown works from any partial state. */
struct hrx_bench_s {
  hrx_bench_config_t config;
  const hrx_bench_ops_t* ops;          /* static */
  hrx_device_t* device;                /* borrowed */
  hrx_backend_device_t* backend;       /* borrowed from device */
  const hrx_backend_vtable_t* vtable;  /* borrowed from backend */
  int queue_count;
  int slot_count;                      /* min(queue_count, streams used) */
  hrx_native_queue_t** queues;   /* raw: owned [slot_count], each owned,
                                    created lazily */
  void* staging;                 /* raw: owned host_alloc block for reads */
  hrx_stream_t** retained;       /* native: owned [retained_streams], each
                                    retained */
  hrx_bench_lane_t* small;       /* owned [lanes] */
  hrx_bench_lane_t* bulk;        /* owned [lanes] */
  /* Native driver with loaded_probes: the probe lanes (ids 2 * lanes + v);
   * a lane's stream and buffers are NULL until made. */
  hrx_bench_lane_t probes[HRX_BENCH_PROBE_COUNT];
  hrx_bench_lane_t* probe;       /* the probe of the running round */
  uint64_t* scratch;             /* owned [lanes]: warm-up samples */
  /* Contention cases (bench_contention.c): */
  hrx_kernel_t* kernel;          /* retained: the spin kernel */
  hrx_native_module_t* module;   /* raw: owned, the same image */
  hrx_native_kernel_t* native_kernel; /* raw: borrowed from module */
  void* upload_source;           /* owned malloc: transfer_bytes */
  hrx_bench_result_t* result;    /* owned until handed to the caller */
};

/* Byte i of lane `id`'s source prefix (bench.c). */
uint8_t hrx_bench_pattern(int id, uint64_t i);
/* min(lane->bytes, HRX_BENCH_CHECK_BYTES). */
uint64_t hrx_bench_check_length(const hrx_bench_lane_t* lane);
/* The lane's src and dst of lane->bytes (untimed). */
hrx_status_t hrx_bench_allocate_lane(hrx_bench_t* bench,
                                     hrx_bench_lane_t* lane);
/* Source patterned, destination filled with another byte (submitted on the
 * lane, not waited for). */
hrx_status_t hrx_bench_initialize_lane(hrx_bench_t* bench,
                                       hrx_bench_lane_t* lane);
/* Makes probe `v`'s stream (native: hrx_stream_create_with_options) or
 * native queue (raw: its own, of the probe's priority) and its buffers,
 * initialized and synchronized; a no-op when it exists. */
hrx_status_t hrx_bench_make_probe(hrx_bench_t* bench, int v);

#endif /* HRX_BENCH_BENCH_RUN_H_ */
