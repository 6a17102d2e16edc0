"""Native queues outside the stream queue pool.

``hrx.fabric.Queue(device)`` creates its own native queue: it takes no pool
slot, does not count as the pool's first use, and is never handed to pool
streams. It offers the Stream API; its ``queue_index`` is None.
"""
from hrx._hrx import FabricQueue as Queue

__all__ = ["Queue"]
