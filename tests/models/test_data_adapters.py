"""fit, evaluate and predict on datasets (issue 45 item 7): PyDataset subclasses, Python
generators with steps, sized iterables, dicts of arrays for named inputs, validation_data
as a dataset; a dataset giving the batches an array fit uses trains bitwise the same."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tinynet as tn
from tinynet.layers import Concatenate, Dense, Input
from tinynet.utils import PyDataset


def _data(n: int = 12) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    return rng.random((n, 3)).astype("float32"), rng.random((n, 2)).astype("float32")


def _model() -> tn.Sequential:
    tn.set_seed(1)
    model = tn.Sequential([Input((3,)), Dense(4, activation="relu"), Dense(2)])
    model.compile("adam", "mse", metrics=["mae"])
    return model


class Batches(PyDataset):
    """The batches of (x, y) in order, ``batch_size`` samples each."""

    def __init__(self, x, y, batch_size, sw=None, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.sw, self.batch_size = x, y, sw, batch_size
        self.ends = 0
        self.begins = 0

    def __len__(self):
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, i):
        s = slice(i * self.batch_size, (i + 1) * self.batch_size)
        if self.sw is not None:
            return self.x[s], self.y[s], self.sw[s]
        return self.x[s], self.y[s]

    def on_epoch_begin(self):
        self.begins += 1

    def on_epoch_end(self):
        self.ends += 1


def _generator(x, y, batch_size, forever=True):
    while True:
        for i in range(0, len(x), batch_size):
            yield x[i:i + batch_size], y[i:i + batch_size]
        if not forever:
            return


def _same_weights(a, b) -> bool:
    return all(u.tobytes() == v.tobytes() for u, v in zip(a.get_weights(), b.get_weights()))


def test_a_py_dataset_fit_is_bitwise_the_array_fit():
    x, y = _data()
    arrays, dataset = _model(), _model()
    h1 = arrays.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    ds = Batches(x, y, 4, workers=2, use_multiprocessing=True, max_queue_size=3)
    h2 = dataset.fit(ds, epochs=3, shuffle=False, verbose=0)
    assert _same_weights(arrays, dataset)
    assert h1.history == h2.history
    assert ds.begins == ds.ends == 3


def test_a_generator_with_steps_per_epoch_is_bitwise_the_array_fit():
    x, y = _data()
    arrays, gen = _model(), _model()
    arrays.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0,
               validation_data=(x[:5], y[:5]))
    history = gen.fit(_generator(x, y, 4), steps_per_epoch=3, epochs=2, verbose=0,
                      validation_data=_generator(x[:5], y[:5], 4), validation_steps=2)
    assert _same_weights(arrays, gen)
    assert len(history.history["val_loss"]) == 2


def test_sample_weights_from_the_dataset_weigh_the_loss():
    x, y = _data()
    sw = np.linspace(0.5, 2.0, len(x)).astype("float32")
    arrays, dataset = _model(), _model()
    arrays.fit(x, y, sample_weight=sw, batch_size=4, epochs=2, shuffle=False, verbose=0)
    dataset.fit(Batches(x, y, 4, sw=sw), epochs=2, shuffle=False, verbose=0)
    assert _same_weights(arrays, dataset)


def test_shuffled_py_dataset_batches_are_reproducible():
    x, y = _data()
    first, second = _model(), _model()
    first.fit(Batches(x, y, 4), epochs=3, verbose=0)
    second.fit(Batches(x, y, 4), epochs=3, verbose=0)
    assert _same_weights(first, second)


def test_a_generator_without_steps_runs_once_then_warns():
    x, y = _data()
    model = _model()
    with pytest.warns(UserWarning, match="Your input ran out of data; interrupting training"):
        history = model.fit(_generator(x, y, 4, forever=False), epochs=3, verbose=0)
    assert history.epoch == [0]


def test_a_generator_shorter_than_steps_warns_and_stops():
    x, y = _data()
    model = _model()
    with pytest.warns(UserWarning, match="Your input ran out of data"):
        history = model.fit(_generator(x, y, 4, forever=False), steps_per_epoch=5, epochs=3,
                            verbose=0)
    assert history.epoch == [0]


def test_evaluate_and_predict_take_datasets():
    x, y = _data()
    model = _model()
    model.fit(x, y, epochs=1, verbose=0)
    want = model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
    assert model.evaluate(Batches(x, y, 4), verbose=0, return_dict=True) == want
    assert model.evaluate(_generator(x, y, 4), steps=3, verbose=0, return_dict=True) == want
    out = model.predict(x, batch_size=4, verbose=0)
    assert np.array_equal(model.predict(Batches(x, y, 4), verbose=0), out)
    xs_only = (x[i:i + 5] for i in range(0, len(x), 5))
    assert np.array_equal(model.predict(xs_only, verbose=0), out)
    assert np.array_equal(model.predict(_generator(x, y, 4), steps=2, verbose=0), out[:8])


def test_a_sized_iterable_is_read_afresh_each_epoch():
    x = np.arange(40, dtype="float32").reshape(20, 2) / 40
    series = tn.utils.timeseries_dataset_from_array(x, x[:, :1], sequence_length=1,
                                                    batch_size=5)
    tn.set_seed(0)
    model = tn.Sequential([Input((1, 2)), tn.layers.Flatten(), Dense(1)])
    model.compile("sgd", "mse")
    history = model.fit(series, epochs=2, verbose=0)
    assert history.epoch == [0, 1]


def test_dicts_of_arrays_feed_named_inputs():
    tn.set_seed(2)
    a, b = Input((3,), name="a"), Input((2,), name="b")
    out = Dense(1, name="out")(Concatenate()([a, b]))
    model = tn.Model([a, b], out)
    model.compile("sgd", "mse")
    rng = np.random.default_rng(0)
    xa, xb = rng.random((8, 3)).astype("float32"), rng.random((8, 2)).astype("float32")
    y = rng.random((8, 1)).astype("float32")
    history = model.fit({"a": xa, "b": xb}, {"out": y}, batch_size=4, epochs=2, verbose=0,
                        validation_data=({"b": xb, "a": xa}, y))
    assert len(history.history["val_loss"]) == 2

    def named():
        while True:
            yield {"a": xa, "b": xb}, y

    assert model.evaluate(named(), steps=1, verbose=0) == model.evaluate([xa, xb], y, verbose=0)
    assert np.array_equal(model.predict({"a": xa, "b": xb}, verbose=0),
                          model.predict([xa, xb], verbose=0))


@pytest.mark.parametrize("call, error, message", [
    (lambda m, x, y: m.fit(Batches(x, y, 4), y, verbose=0), ValueError,
     "Sequential.fit: y must be None when x is a dataset (a PyDataset or a generator yields "
     "its own), got ndarray"),
    (lambda m, x, y: m.fit(Batches(x, y, 4), validation_split=0.2, verbose=0), ValueError,
     "Sequential.fit: validation_split is for arrays; with a dataset pass validation_data, "
     "got validation_split=0.2"),
    (lambda m, x, y: m.fit(x, y, steps_per_epoch=2, verbose=0), ValueError,
     "Sequential.fit: steps_per_epoch is for a PyDataset or a generator; with arrays every "
     "batch of batch_size samples is used, got steps_per_epoch=2"),
    (lambda m, x, y: m.fit(iter([x]), verbose=0), ValueError,
     "Sequential.fit: a dataset batch must be (x, y) or (x, y, sample_weight); got x alone"),
    (lambda m, x, y: m.fit(iter([(x, y, y, y)]), verbose=0), ValueError,
     "Sequential.fit: a dataset batch must be (x,), (x, y) or (x, y, sample_weight), or x "
     "alone; got tuple of length 4"),
    (lambda m, x, y: m.evaluate(iter([]), verbose=0), ValueError,
     "Sequential.evaluate: the data gave no batch (an empty or exhausted generator)"),
    (lambda m, x, y: m.predict(x, steps=0, verbose=0), ValueError,
     "Sequential.predict: steps must be None or a positive int, got 0"),
])
def test_dataset_argument_errors(call, error, message):
    x, y = _data()
    with pytest.raises(error, match=re.escape(message)):
        call(_model(), x, y)


def test_py_dataset_base_names_what_a_subclass_must_define():
    with pytest.raises(NotImplementedError, match="must define __len__"):
        len(PyDataset())
    with pytest.raises(NotImplementedError, match="must define __getitem__"):
        PyDataset()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert PyDataset(workers=4).workers == 4
