"""A one-minute look at submission batching on the GPU: the C benchmark
driver with 5 samples at 1, 8 and 16 queues, batching off then on, in one
process (a live device per setting). Not a recorded protocol run (that is
`hrx-bench sweep --batching on,off`); for checking a change quickly:
    python3 -P bench/scripts/h200_quick_batching.py
"""
import hrx
def med(x): x=sorted(x); return x[len(x)//2]
def p95(x): x=sorted(x); return x[-1 - len(x)//20]
for q in (1, 8, 16):
  for b in (False, True):
    d = hrx.Device.open(backend="hip", batching=b)
    d.set_stream_queue_count(q)
    r = hrx._hrx.bench_run(d, samples=5, warmup=1)
    n = 16*1024
    print(f"batching={b} q={q} one-thread {n/med(r['small_round_ns'])*1e3:.2f} M/s  16-thr {n/med(r['threaded_round_ns'])*1e3:.2f} M/s  bulk {16*16*32*2**20*2/med(r['bulk_round_ns']):.0f} GB/s idle p95 {p95(r['idle_sample_ns'])/1e3:.2f} us loaded p95 {p95(r['loaded_sample_ns'])/1e6:.3f} ms", flush=True)
    print(d.info["batch_publication"]) if q == 1 and b else None
    del d, r
