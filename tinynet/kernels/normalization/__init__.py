"""The normalization kernels: the group-norm forward and backward passes, their row and
lane variants, and the deterministic folds (:mod:`tinynet.ops.arrays.normalization` is
the operation that plans and calls them)."""
