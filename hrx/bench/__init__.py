"""hrx.bench: the queue-pool benchmark.

run(queues, ...)     one run in this process, one result line (a dict)
sweep(...)           every (queue count, repeat) in a fresh process -> Results
load(*paths)         Results of results files
table(source)        the text report (table, ranges, decisive differences, default)
Results              lines, table(), recommend(), plot(), HTML in notebooks
workload             the contract of --workload module:function (your own rounds)
"""
from .results import Results, load
from .runner import run
from .sweep import sweep
from .table import table

__all__ = ["run", "sweep", "Results", "load", "table"]
