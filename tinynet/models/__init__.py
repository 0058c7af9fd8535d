"""Models: ``Sequential`` (a stack of layers) and ``Model`` (a functional graph), with
Keras 3's ``keras.models`` functions: ``load_model``, ``save_model``, ``clone_model`` and
``model_from_json``."""

from tinynet.models.cloning import clone_model, model_from_json
from tinynet.models.functional import Model
from tinynet.models.sequential import Sequential
from tinynet.saving.api import load_model, save_model

__all__ = ["Model", "Sequential", "clone_model", "load_model", "model_from_json", "save_model"]
