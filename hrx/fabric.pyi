"""Type stub of hrx.fabric: native queues outside the stream queue pool."""

from hrx._hrx import FabricQueue as Queue

__all__ = ["Queue"]
