# %% [markdown]
# # A small queue-pool sweep from a notebook
#
# Runs `hrx.bench.sweep` on the default backend (hip when a GPU is found,
# else host) with quick settings, then shows the results table, the
# recommendation and the plot. The `# %%` markers make this file a notebook
# in Jupyter (jupytext) and VS Code; `python bench/examples/quick_sweep.py`
# runs it as a script. Sizes come from the environment so that tests can
# make it tiny: HRX_EXAMPLE_QUEUES (default 1,2,4,8), HRX_EXAMPLE_REPEATS
# (2), HRX_EXAMPLE_SAMPLES (5), HRX_EXAMPLE_WORKLOAD (unset: none; e.g.
# bench/examples/copy_workload.py:round), HRX_EXAMPLE_OUT (the results file,
# default quick-sweep.jsonl in the working directory) and HRX_EXAMPLE_TINY
# (1: the smallest sizes, for tests).

# %%
import os

import hrx
from hrx.bench import sweep
from hrx.bench.plot import PlotUnavailable

queues = [int(q) for q in os.environ.get("HRX_EXAMPLE_QUEUES", "1,2,4,8").split(",")]
repeats = int(os.environ.get("HRX_EXAMPLE_REPEATS", "2"))
samples = int(os.environ.get("HRX_EXAMPLE_SAMPLES", "5"))
workload = os.environ.get("HRX_EXAMPLE_WORKLOAD") or None
output = os.environ.get("HRX_EXAMPLE_OUT", "quick-sweep.jsonl")
sizes = ({"small_copies": 2, "bulk_bytes": 4096, "bulk_copies": 1, "loaded_copies": 1,
          "warmup": 1} if os.environ.get("HRX_EXAMPLE_TINY") == "1" else None)

device = hrx.Device.open()
print(device.info["name"], "/", device.info["backend"], "/", device.info["target"])
del device   # each child opens the device afresh; this process must not hold it

# %% [markdown]
# Each (queue count, repeat) runs in a fresh process, one after another, in
# the protocol's orders; every child appends one line to `output`.

# %%
results = sweep(queues, repeats, samples, quick=True, sizes=sizes, output=output,
                workload=workload, progress=False)
results   # a notebook renders the table (median, run-to-run range) as HTML

# %%
print(results.table())
print(results.recommend())

# %%
try:
    figure = results.plot(output.replace(".jsonl", ".png"))
    print("plot:", output.replace(".jsonl", ".png"))
    figure   # shown inline in a notebook
except PlotUnavailable as error:   # matplotlib is not installed
    print(error)
