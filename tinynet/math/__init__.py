"""The import path DESIGN.md §3.4 pins for the fold block: ``tinynet.math.reduction``.

The operations themselves live in :mod:`tinynet.ops.arrays`; this package only names the
pinned constant and fold there.
"""
