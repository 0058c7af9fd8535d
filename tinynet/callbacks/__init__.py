"""Training callbacks with Keras 3 hook names and semantics.

``fit`` calls, in order: ``set_model``, ``set_params``, ``on_train_begin``, then per
epoch ``on_epoch_begin(epoch)``, ``on_train_batch_begin(batch)`` /
``on_train_batch_end(batch, logs)`` around each step (``logs`` hold the running epoch
means; the two call ``on_batch_begin``/``on_batch_end`` unless overridden), the
validation's ``on_test_begin``, ``on_test_batch_begin``/``on_test_batch_end`` and
``on_test_end(logs)``, ``on_epoch_end(epoch, logs)`` (the epoch's loss, metrics and
``val_*`` entries), and finally ``on_train_end(logs)``. ``evaluate`` calls the
``on_test_*`` hooks and ``predict`` the ``on_predict_*`` hooks. ``logs`` is always a
dict; epochs and batches are 0-based, as in Keras. Setting ``model.stop_training = True``
ends training after the current batch (checked after each batch and each epoch).
"""

from tinynet.callbacks.backup_and_restore import BackupAndRestore
from tinynet.callbacks.base import Callback
from tinynet.callbacks.callback_list import CallbackList
from tinynet.callbacks.csv_logger import CSVLogger
from tinynet.callbacks.early_stopping import EarlyStopping
from tinynet.callbacks.history import History
from tinynet.callbacks.lambda_callback import LambdaCallback
from tinynet.callbacks.learning_rate_scheduler import LearningRateScheduler
from tinynet.callbacks.model_checkpoint import ModelCheckpoint
from tinynet.callbacks.progbar_logger import ProgbarLogger
from tinynet.callbacks.reduce_lr_on_plateau import ReduceLROnPlateau
from tinynet.callbacks.tensorboard import TensorBoard
from tinynet.callbacks.terminate_on_nan import TerminateOnNaN

__all__ = ["Callback", "CallbackList", "History", "EarlyStopping", "LearningRateScheduler",
           "ModelCheckpoint", "CSVLogger", "LambdaCallback", "TerminateOnNaN",
           "ReduceLROnPlateau", "BackupAndRestore", "ProgbarLogger", "TensorBoard"]
