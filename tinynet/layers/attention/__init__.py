"""The attention layers: ``MultiHeadAttention``, ``Attention``, ``AdditiveAttention``."""

from tinynet.layers.attention.additive_attention import AdditiveAttention
from tinynet.layers.attention.attention import Attention
from tinynet.layers.attention.multi_head_attention import MultiHeadAttention

__all__ = ["MultiHeadAttention", "Attention", "AdditiveAttention"]
