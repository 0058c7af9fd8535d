"""Keras-compat script in the steps of the keras-io guide "Making new layers and models via
subclassing" (guides/making_new_layers_and_models_via_subclassing.py): a `Linear` layer
with weights made by `add_weight` in `__init__`, then lazily in `build`; a non-trainable
weight updated with `assign_add`; nested layers; `add_loss` and `layer.losses` (reset at
every top-level call, kernel regularizers included); `fit` with an added loss, with and
without a compiled loss; `get_config`/`from_config`; a dropout layer with a `training`
argument drawing from a `keras.random.SeedGenerator`; and the end-to-end Variational
AutoEncoder, subclassed (`keras.Model` with `add_loss` in `call`) and functional.

It runs unchanged on Keras 3 and on tinynet: the import block is the only place the two
differ (KERAS_COMPAT=keras picks Keras). Data: scikit-learn's 8x8 digits scaled to [0, 1]
(64 features instead of MNIST's 784) and small NumPy arrays from a seeded generator.
"""

import json
import os

import numpy as np
from sklearn.datasets import load_digits

if os.environ.get("KERAS_COMPAT") == "keras":
    import keras
    from keras import layers, ops
else:
    import tinynet as keras
    from tinynet import layers, ops

keras.utils.set_random_seed(44)
rng = np.random.default_rng(44)


# -- a layer holds state (weights) and a computation (call) ------------------------------
class Linear(keras.layers.Layer):
    def __init__(self, units=32, input_dim=32):
        super().__init__()
        self.w = self.add_weight(shape=(input_dim, units), initializer="random_normal",
                                 trainable=True)
        self.b = self.add_weight(shape=(units,), initializer="zeros", trainable=True)

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b


x = ops.ones((2, 2))
linear_layer = Linear(4, 2)
y = linear_layer(x)
print(y)
# the weights set as attributes are tracked, in the order they were made
assert linear_layer.weights == [linear_layer.w, linear_layer.b]
linear_output_shape = tuple(ops.shape(y))


# -- a non-trainable weight ------------------------------------------------------------
class ComputeSum(keras.layers.Layer):
    def __init__(self, input_dim):
        super().__init__()
        self.total = self.add_weight(initializer="zeros", shape=(input_dim,), trainable=False)

    def call(self, inputs):
        self.total.assign_add(ops.sum(inputs, axis=0))
        return self.total


x = ops.ones((2, 2))
my_sum = ComputeSum(2)
y = my_sum(x)
print(y.numpy())
y = my_sum(x)
print(y.numpy())
sum_total = float(np.sum(y.numpy()))
print("weights:", len(my_sum.weights))
print("non-trainable weights:", len(my_sum.non_trainable_weights))
print("trainable_weights:", my_sum.trainable_weights)
sum_weight_counts = (len(my_sum.weights), len(my_sum.non_trainable_weights),
                     len(my_sum.trainable_weights))
assert sum_weight_counts == (1, 1, 0)


# -- weights made once the input shape is known ---------------------------------------
class Linear(keras.layers.Layer):
    def __init__(self, units=32):
        super().__init__()
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                 initializer="random_normal", trainable=True)
        self.b = self.add_weight(shape=(self.units,), initializer="random_normal",
                                 trainable=True)

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b


linear_layer = Linear(32)
assert len(linear_layer.weights) == 0  # nothing yet: the first call builds
y = linear_layer(x)
assert tuple(ops.shape(linear_layer.w)) == (2, 32)


# -- layers nest: the outer layer tracks the weights of the inner ones -----------------
class MLPBlock(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.linear_1 = Linear(32)
        self.linear_2 = Linear(32)
        self.linear_3 = Linear(1)

    def call(self, inputs):
        x = self.linear_1(inputs)
        x = keras.activations.relu(x)
        x = self.linear_2(x)
        x = keras.activations.relu(x)
        return self.linear_3(x)


mlp = MLPBlock()
y = mlp(ops.ones(shape=(3, 64)))  # the first call makes the weights
print("weights:", len(mlp.weights))
print("trainable weights:", len(mlp.trainable_weights))
mlp_weight_count = len(mlp.weights)


# -- add_loss(), and layer.losses ----------------------------------------------------------
class ActivityRegularizationLayer(keras.layers.Layer):
    def __init__(self, rate=1e-2):
        super().__init__()
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * ops.mean(inputs))
        return inputs


class OuterLayer(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.activity_reg = ActivityRegularizationLayer(1e-2)

    def call(self, inputs):
        return self.activity_reg(inputs)


layer = OuterLayer()
assert len(layer.losses) == 0  # never called: no loss yet
_ = layer(ops.zeros((1, 1)))
assert len(layer.losses) == 1  # the loss of that call
_ = layer(ops.ones((1, 1)))
assert len(layer.losses) == 1  # losses are reset at every top-level call
activity_loss = float(np.asarray(layer.losses[0]))
assert abs(activity_loss - 1e-2) < 1e-7


class OuterLayerWithKernelRegularizer(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(32, kernel_regularizer=keras.regularizers.l2(1e-3))

    def call(self, inputs):
        return self.dense(inputs)


layer = OuterLayerWithKernelRegularizer()
_ = layer(ops.zeros((1, 1)))
print(layer.losses)  # 1e-3 * sum(kernel ** 2), from the kernel regularizer
kernel = np.asarray(layer.dense.kernel)
assert len(layer.losses) == 1
assert abs(float(np.asarray(layer.losses[0])) - 1e-3 * float(np.sum(kernel ** 2))) < 1e-6
regularizer_loss_count = len(layer.losses)

# fit() adds the added losses to the compiled one
inputs = keras.Input(shape=(3,))
outputs = ActivityRegularizationLayer()(inputs)
model = keras.Model(inputs, outputs)
model.compile(optimizer="adam", loss="mse")
model.fit(rng.random((2, 3)), rng.random((2, 3)), verbose=0)
# ... and trains on them alone when compile() names no loss
model.compile(optimizer="adam")
model.fit(rng.random((2, 3)), rng.random((2, 3)), verbose=0)

# the same with a weight to train: the added loss alone drives it down
inputs = keras.Input(shape=(3,))
outputs = ActivityRegularizationLayer()(keras.layers.Dense(3)(inputs))
model = keras.Model(inputs, outputs)
model.compile(optimizer="adam")
x_small = rng.random((32, 3)).astype("float32")
history = model.fit(x_small, rng.random((32, 3)), batch_size=8, epochs=3, verbose=0)
added_losses = history.history["loss"]
print("loss from add_loss alone:", [round(float(v), 4) for v in added_losses])
added_loss_is_decreasing = int(added_losses[-1] < added_losses[0])


# -- serialization: get_config and from_config -------------------------------------------
class Linear(keras.layers.Layer):
    def __init__(self, units=32):
        super().__init__()
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                 initializer="random_normal", trainable=True)
        self.b = self.add_weight(shape=(self.units,), initializer="random_normal",
                                 trainable=True)

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b

    def get_config(self):
        return {"units": self.units}


layer = Linear(64)
config = layer.get_config()
print(config)
new_layer = Linear.from_config(config)
plain_config_is_same = int(new_layer.get_config() == config and new_layer.units == 64)


class Linear(keras.layers.Layer):
    def __init__(self, units=32, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                 initializer="random_normal", trainable=True)
        self.b = self.add_weight(shape=(self.units,), initializer="random_normal",
                                 trainable=True)

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config


layer = Linear(64, name="linear_64")
config = layer.get_config()
print({key: config[key] for key in ("name", "trainable", "units")})
new_layer = Linear.from_config(config)
kwargs_config_is_same = int(new_layer.name == "linear_64" and new_layer.units == 64)


# -- the training argument of call() ----------------------------------------------------
class CustomDropout(keras.layers.Layer):
    def __init__(self, rate, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs, training=None):
        if training:
            return keras.random.dropout(inputs, rate=self.rate, seed=self.seed_generator)
        return inputs


dropout = CustomDropout(0.5)
ones = ops.ones((4, 8))
dropped = np.asarray(dropout(ones, training=True))
assert set(np.unique(dropped)) <= {0.0, 2.0}  # kept entries are scaled by 1 / (1 - rate)
dropout_inference_is_identity = int(np.array_equal(np.asarray(dropout(ones)), np.ones((4, 8))))

digits = load_digits()
x_digits = (digits.data / 16.0).astype("float32")
y_digits = digits.target
model = keras.Sequential([keras.Input(shape=(64,)), layers.Dense(64, activation="relu"),
                          CustomDropout(0.5), layers.Dense(10)])
model.compile(optimizer="adam",
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.fit(x_digits[:1400], y_digits[:1400], batch_size=64, epochs=5, verbose=0)
first = model.predict(x_digits[1400:], verbose=0)
second = model.predict(x_digits[1400:], verbose=0)
dropout_predict_is_repeatable = int(np.array_equal(first, second))
_, dropout_test_accuracy = model.evaluate(x_digits[1400:], y_digits[1400:], verbose=0)


# -- putting it all together: a Variational AutoEncoder -------------------------------------
class Sampling(layers.Layer):
    """Draws z from the normal distribution of mean z_mean and log-variance z_log_var."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = ops.shape(z_mean)[0]
        dim = ops.shape(z_mean)[1]
        epsilon = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


class Encoder(layers.Layer):
    """Maps a digit to the triplet (z_mean, z_log_var, z)."""

    def __init__(self, latent_dim=32, intermediate_dim=64, name="encoder", **kwargs):
        super().__init__(name=name, **kwargs)
        self.dense_proj = layers.Dense(intermediate_dim, activation="relu")
        self.dense_mean = layers.Dense(latent_dim)
        self.dense_log_var = layers.Dense(latent_dim)
        self.sampling = Sampling()

    def call(self, inputs):
        x = self.dense_proj(inputs)
        z_mean = self.dense_mean(x)
        z_log_var = self.dense_log_var(x)
        z = self.sampling((z_mean, z_log_var))
        return z_mean, z_log_var, z


class Decoder(layers.Layer):
    """Maps z back to a digit."""

    def __init__(self, original_dim, intermediate_dim=64, name="decoder", **kwargs):
        super().__init__(name=name, **kwargs)
        self.dense_proj = layers.Dense(intermediate_dim, activation="relu")
        self.dense_output = layers.Dense(original_dim, activation="sigmoid")

    def call(self, inputs):
        x = self.dense_proj(inputs)
        return self.dense_output(x)


class VariationalAutoEncoder(keras.Model):
    """The encoder and the decoder end to end, with the KL divergence as an added loss."""

    def __init__(self, original_dim, intermediate_dim=64, latent_dim=32, name="autoencoder",
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.original_dim = original_dim
        self.encoder = Encoder(latent_dim=latent_dim, intermediate_dim=intermediate_dim)
        self.decoder = Decoder(original_dim, intermediate_dim=intermediate_dim)

    def call(self, inputs):
        z_mean, z_log_var, z = self.encoder(inputs)
        reconstructed = self.decoder(z)
        kl_loss = -0.5 * ops.mean(z_log_var - ops.square(z_mean) - ops.exp(z_log_var) + 1)
        self.add_loss(kl_loss)
        return reconstructed


x_train = x_digits
original_dim = 64
vae = VariationalAutoEncoder(original_dim, 64, 32)
optimizer = keras.optimizers.Adam(learning_rate=1e-3)
vae.compile(optimizer, loss=keras.losses.MeanSquaredError())
vae_history = vae.fit(x_train, x_train, epochs=2, batch_size=64, verbose=0)
print("VAE loss per epoch:", [round(float(v), 4) for v in vae_history.history["loss"]])
vae_weight_count = len(vae.weights)


# -- the same VAE, functional: the KL divergence added by a layer of the graph -----------
class KLDivergenceLoss(layers.Layer):
    """Adds the KL divergence of (z_mean, z_log_var) to the loss; passes z_mean on."""

    def call(self, inputs):
        z_mean, z_log_var = inputs
        self.add_loss(-0.5 * ops.mean(z_log_var - ops.square(z_mean) - ops.exp(z_log_var) + 1))
        return z_mean


intermediate_dim = 64
latent_dim = 32
original_inputs = keras.Input(shape=(original_dim,), name="encoder_input")
x = layers.Dense(intermediate_dim, activation="relu")(original_inputs)
z_mean = layers.Dense(latent_dim, name="z_mean")(x)
z_log_var = layers.Dense(latent_dim, name="z_log_var")(x)
z_mean = KLDivergenceLoss()((z_mean, z_log_var))
z = Sampling()((z_mean, z_log_var))
encoder = keras.Model(inputs=original_inputs, outputs=z, name="encoder")

latent_inputs = keras.Input(shape=(latent_dim,), name="z_sampling")
x = layers.Dense(intermediate_dim, activation="relu")(latent_inputs)
outputs = layers.Dense(original_dim, activation="sigmoid")(x)
decoder = keras.Model(inputs=latent_inputs, outputs=outputs, name="decoder")

outputs = decoder(z)
functional_vae = keras.Model(inputs=original_inputs, outputs=outputs, name="vae")
optimizer = keras.optimizers.Adam(learning_rate=1e-3)
functional_vae.compile(optimizer, loss=keras.losses.MeanSquaredError())
functional_history = functional_vae.fit(x_train, x_train, epochs=3, batch_size=64, verbose=0)
print("functional VAE loss per epoch:",
      [round(float(v), 4) for v in functional_history.history["loss"]])

print("RESULT " + json.dumps({
    "linear_output_count": int(np.prod(linear_output_shape)),
    "sum_total": round(sum_total, 4),
    "mlp_weight_count": mlp_weight_count,
    "regularizer_loss_count": regularizer_loss_count,
    "added_loss_is_decreasing": added_loss_is_decreasing,
    "plain_config_is_same": plain_config_is_same,
    "kwargs_config_is_same": kwargs_config_is_same,
    "dropout_inference_is_identity": dropout_inference_is_identity,
    "dropout_predict_is_repeatable": dropout_predict_is_repeatable,
    "dropout_test_accuracy": round(float(dropout_test_accuracy), 3),
    "vae_weight_count": vae_weight_count,
    "vae_final_loss": round(float(vae_history.history["loss"][-1]), 4),
    "functional_vae_final_loss": round(float(functional_history.history["loss"][-1]), 4),
}))
