"""Saving and loading models: one ``.safetensors`` file, no code in it.

File layout (format version 1):

* tensors ``<layer_name>/<param_name>`` hold every parameter (non-trainable included),
  float32 (a ``call()`` layer's sub-layer weights as ``<layer>/<sub-layer>/<param>``);
  a full save (:func:`save_model`) adds the optimizer slots as
  ``optimizer/<layer_name>/<param_name>/<slot>``;
* the header's ``__metadata__`` (string to string) holds ``format`` (``"tinynet"``),
  ``format_version`` (``"1"``), ``kind`` (``"model"`` or ``"weights"``) and, as JSON,
  ``model_config`` (``Sequential.get_config()``, class names as registered),
  ``compile_config`` (optimizer, loss and metrics) and ``training_state`` (optimizer
  iterations and the states of the model's shuffling generator and of each layer's
  random generator, big integers as decimal strings). With all of it restored, training
  resumes bitwise where it stopped.

Any safetensors reader (``safetensors.numpy.load_file``, ``safetensors.torch.load_file``)
opens the file. Loading never executes code from it: classes and functions are looked up
by the name the file gives them, in ``load_model``'s ``custom_objects``, the active
:func:`custom_object_scope` blocks and the registries (built-in layers, losses and
metrics, plus those decorated with :func:`register_keras_serializable` or
:func:`register_layer`), never imported; configurations are type-checked before use,
the header size is checked against the file size and capped, and any corrupt, truncated,
foreign or mismatched file raises ``ValueError`` saying what is wrong. Writes are
atomic: a temporary file in the target folder, flushed and fsynced, then renamed over the
target; a failed save leaves the previous file untouched.
"""

from tinynet.layers.registry import register_layer, registered_layers
from tinynet.saving.api import load_model, load_weights, save_model, save_weights
from tinynet.saving.files import FORMAT, FORMAT_VERSION
from tinynet.custom_objects import (CustomObjectScope, custom_object_scope, get_custom_objects,
                                    get_registered_name, get_registered_object,
                                    register_keras_serializable)
from tinynet.saving.serialization import deserialize_keras_object, serialize_keras_object

__all__ = ["save_model", "save_weights", "load_weights", "load_model", "register_layer",
           "registered_layers", "FORMAT", "FORMAT_VERSION", "register_keras_serializable",
           "custom_object_scope", "CustomObjectScope", "get_custom_objects",
           "get_registered_name", "get_registered_object", "serialize_keras_object",
           "deserialize_keras_object"]
