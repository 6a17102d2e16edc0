"""hrx.bench: the queue-pool benchmark.

run(queues, ...)     one run in this process, one result line (a dict); a
                     workload may be a function of this process
sweep(...)           every (queue count, repeat) in a fresh process -> the
                     Results of this sweep's own runs
sweep_workload(fn)   your workload ALONE (no built-in case) at each queue count,
                     each in a fresh process, with repeats, ranges and the
                     recommended default
load(*paths)         Results of results files
table(source)        the text report (table, ranges, decisive differences, default)
Results              lines, table(), recommend(), plot(), to_dataframe(), HTML
                     in notebooks
workload             the contract of --workload (your own rounds)

Sizes: ``preset="auto"`` (the default) applies the size rule of config.py:
the quick sizes on the host backend (a CPU device), the reference protocol's
on a GPU; ``preset="reference"`` always uses the reference sizes.
"""
from .results import Results, load
from .runner import run
from .sweep import sweep, sweep_workload
from .table import table

__all__ = ["run", "sweep", "sweep_workload", "Results", "load", "table"]
