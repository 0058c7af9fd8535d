"""Training callbacks with Keras 3 hook names and semantics.

``Sequential.fit`` calls, in order: ``on_train_begin``, then per epoch
``on_epoch_begin(epoch)``, ``on_train_batch_begin(batch)`` /
``on_train_batch_end(batch, logs)`` around each step (``logs`` hold the running epoch
means), ``on_epoch_end(epoch, logs)`` (``logs`` hold the epoch's loss, metrics and
``val_*`` entries), and finally ``on_train_end(logs)``. Epochs and batches are 0-based,
as in Keras. Setting ``model.stop_training = True`` ends training after the current
batch (checked after each batch and each epoch).
"""

from tinynet.callbacks.backup_and_restore import BackupAndRestore
from tinynet.callbacks.base import Callback, CallbackList
from tinynet.callbacks.csv_logger import CSVLogger
from tinynet.callbacks.early_stopping import EarlyStopping
from tinynet.callbacks.history import History
from tinynet.callbacks.lambda_callback import LambdaCallback
from tinynet.callbacks.learning_rate_scheduler import LearningRateScheduler
from tinynet.callbacks.model_checkpoint import ModelCheckpoint
from tinynet.callbacks.reduce_lr_on_plateau import ReduceLROnPlateau
from tinynet.callbacks.terminate_on_nan import TerminateOnNaN

__all__ = ["Callback", "CallbackList", "History", "EarlyStopping", "LearningRateScheduler",
           "ModelCheckpoint", "CSVLogger", "LambdaCallback", "TerminateOnNaN",
           "ReduceLROnPlateau", "BackupAndRestore"]
