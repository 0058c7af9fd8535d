"""``model.layer_graph()``: one walk for Sequential (a chain) and functional models.

The summary and the ONNX exporter read models only through it, so these tests pin what
it holds: the steps in execution order, how values flow between them (running the steps
on arrays gives ``predict``'s output), the inputs' names and shapes, and Keras's
"plain chain" decision that drops the summary's ``Connected to`` column.
"""

from __future__ import annotations

import numpy as np

import tinynet as tn
from tinynet.layers import Add, Dense, Input, ReLU
from tinynet.models.graph import LayerGraph
from tinynet.utils.summary import summary_text


def _run(graph: LayerGraph, xs: list[np.ndarray]) -> list[np.ndarray]:
    """Runs the steps on arrays, as the exporter walks them."""
    values = dict(zip(graph.inputs, xs))
    for step in graph.steps:
        args = [values[key] for key in step.inputs]
        out = step.layer(args if step.listed else args[0])
        for key, o in zip(step.outputs, [out]):
            values[key] = np.asarray(o)
    return [values[key] for key in graph.outputs]


def test_sequential_is_a_chain():
    tn.set_seed(0)
    model = tn.Sequential([Input((4,), name="pixels"), Dense(3), ReLU(), Dense(2)])
    graph = model.layer_graph()
    assert [s.layer for s in graph.steps] == model.layers
    assert [(s.inputs, s.outputs, s.listed, s.node) for s in graph.steps] == [
        ([0], [1], False, None), ([1], [2], False, None), ([2], [3], False, None)]
    assert graph.inputs == [0] and graph.outputs == [3]
    assert graph.input_names == ["pixels"] and graph.input_shapes == [(None, 4)]
    assert graph.built and graph.chain and graph.nodes is None
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_array_equal(_run(graph, [x])[0], model.predict(x, verbose=0))


def test_unbuilt_sequential():
    graph = tn.Sequential([Dense(3)]).layer_graph()
    assert not graph.built
    assert graph.input_names == ["input_layer"] and graph.input_shapes == [None]


def test_functional_steps_follow_the_nodes():
    tn.set_seed(0)
    a = Input((3,), name="a")
    b = Input((3,), name="b")
    shared = Dense(3, name="shared")
    h = Add()([shared(a), shared(b)])
    model = tn.Model([a, b], Dense(2, name="head")(h))
    graph = model.layer_graph()
    assert [s.layer.name for s in graph.steps] == ["shared", "shared", "add", "head"]
    assert graph.input_names == ["a", "b"] and graph.input_shapes == [(None, 3), (None, 3)]
    assert [s.listed for s in graph.steps] == [False, False, True, False]
    assert graph.built and not graph.chain  # two nodes at one depth, a shared layer
    assert all(id(s.node) in graph.nodes for s in graph.steps)
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(2)]
    np.testing.assert_array_equal(_run(graph, xs)[0], model.predict(xs, verbose=0))


def test_functional_chain_is_a_chain():
    x = Input((3,))
    model = tn.Model(x, Dense(2)(ReLU()(x)))
    graph = model.layer_graph()
    assert graph.chain
    assert [s.layer for s in graph.steps] == model.layers[1:]  # InputLayer runs no step


def test_subclassed_model_has_no_layer_graph():
    class Net(tn.Model):
        def __init__(self):
            super().__init__()
            self.dense = Dense(2)

        def call(self, x):
            return self.dense(x)

    net = Net()
    net(np.ones((1, 3), np.float32))
    assert net.layer_graph() is None
    text = summary_text(net)  # the summary lists its layers, without a graph
    assert "dense (Dense)" in text and "Connected to" not in text
