"""``DET_REDUCE_BLOCK`` and ``det_reduce`` at the path DESIGN.md §3.4 pins.

They are :mod:`tinynet.ops.arrays.reduction`'s (the one home of operations): the block of
positions every deterministic fold reduces at a time, and the fold itself.
"""

from tinynet.ops.arrays.reduction import DET_REDUCE_BLOCK, det_reduce

__all__ = ["DET_REDUCE_BLOCK", "det_reduce"]
