"""Batch, group, instance and layer normalization on one deterministic group-norm core."""

from tinynet.kernels.normalization import folds
from tinynet.layers.regularization.normalization.batch_normalization import BatchNormalization
from tinynet.ops.arrays.normalization import (
    group_norm_backward_core,
    group_norm_forward_core,
)
from tinynet.layers.regularization.normalization.group_normalization import GroupNormalization
from tinynet.layers.regularization.normalization.instance_normalization import (
    InstanceNormalization,
)
from tinynet.layers.regularization.normalization.layer_normalization import LayerNormalization

__all__ = ["BatchNormalization", "GroupNormalization", "InstanceNormalization",
           "LayerNormalization", "group_norm_forward_core", "group_norm_backward_core", "folds"]
