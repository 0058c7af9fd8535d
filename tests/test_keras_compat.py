"""The Keras-compat scripts (examples/keras_compat/) run to the end on tinynet, with the
results docs/keras_compat.md states for tinynet and close to those it states for Keras."""

from __future__ import annotations

import pytest

from tools import keras_compat

TABLE = keras_compat.table()


def test_every_script_has_rows_and_every_row_a_script():
    assert {script for script, _ in TABLE} == set(keras_compat.scripts())


@pytest.mark.parametrize("name", keras_compat.scripts())
def test_script_runs_on_tinynet_with_the_documented_results(name):
    results = keras_compat.run(name)
    rows = {metric: values for (script, metric), values in TABLE.items() if script == name}
    assert set(results) == set(rows)
    for metric, value in results.items():
        keras, documented = rows[metric]
        assert value == pytest.approx(documented, abs=1e-9), (name, metric)
        assert keras_compat.close(metric, value, keras), (name, metric, value, keras)


@pytest.mark.parametrize("metric, tinynet, keras, expected", [
    ("test_accuracy", 0.90, 0.95, True), ("test_accuracy", 0.80, 0.90, False),
    ("epochs", 12, 15, True), ("epochs", 10, 15, False),
    ("final_loss", 0.11, 0.1, True), ("final_loss", 0.13, 0.1, False),
    ("hook_calls", 34, 34, True), ("hook_calls", 33, 34, False)])
def test_close(metric, tinynet, keras, expected):
    assert keras_compat.close(metric, tinynet, keras) is expected
