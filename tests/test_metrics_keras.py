"""Keras 3.15.1 values of the metrics of issue 45 (``TruePositives`` ... ``Sum``).

The expected values come from Keras 3.15.1 (JAX backend) on the same batches, computed in a
scratch virtualenv by ``update_state`` on batch 1, then on batch 2 with its
``sample_weight``, then ``reset_state`` and batch 2 alone (no weights), recorded as
``(after batch 1, after batch 2, batch 2 alone)``. Keras accumulates in float32, so the
comparison allows float32 rounding.
"""

import numpy as np
import pytest

import tinynet as tn
from tinynet import metrics as M

DATA = {
    'b1_t': [[1.0], [1.0], [1.0], [1.0], [1.0], [1.0], [1.0], [1.0]],
    'b1_p': [[0.4090000092983246], [0.6710000038146973], [0.6269999742507935], [0.8399999737739563], [0.7239999771118164], [0.5289999842643738], [0.9639999866485596], [0.4690000116825104]],
    'b2_t': [[1.0, 1.0], [1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0]],
    'b2_p': [[0.10599999874830246, 0.125], [0.777999997138977, 0.17499999701976776], [0.7099999785423279, 0.7020000219345093], [0.5230000019073486, 0.9599999785423279], [0.37299999594688416, 0.03500000014901161], [0.4950000047683716, 0.2029999941587448]],
    'b2_w': [0.25, 1.9800000190734863, 0.7200000286102295, 1.3799999952316284, 0.41999998688697815, 0.029999999329447746],
    'r1_t': [[1.0750000476837158, 0.8230000138282776, 0.8070000410079956], [0.9180000424385071, 0.4189999997615814, 0.5360000133514404], [0.4749999940395355, 0.9740000367164612, 0.41600000858306885], [0.44099998474121094, 0.8510000109672546, 0.7120000123977661]],
    'r1_p': [[0.5299999713897705, 0.14100000262260437, 0.382999986410141], [0.8989999890327454, 0.09700000286102295, 0.8119999766349792], [0.6769999861717224, 0.11400000005960464, 0.8029999732971191], [0.5009999871253967, 0.4090000092983246, 0.6230000257492065]],
    'r2_t': [[0.3969999849796295, 0.17599999904632568, 0.3330000042915344], [0.28200000524520874, 0.5160000324249268, 0.6150000095367432], [0.3460000157356262, 0.8889999985694885, 0.46299999952316284], [0.7129999995231628, 0.7930000424385071, 0.8730000257492065], [0.25999999046325684, 0.4089999794960022, 0.9259999990463257]],
    'r2_p': [[0.7059999704360962, 0.5170000195503235, 0.9120000004768372], [0.24699999392032623, 0.4480000138282776, 0.48899999260902405], [0.1720000058412552, 0.20800000429153442, 0.6330000162124634], [0.0, 0.3970000147819519, 0.2939999997615814], [0.7699999809265137, 0.4429999887943268, 0.9210000038146973]],
    'r2_w': [1.6799999475479126, 0.38999998569488525, 1.840000033378601, 1.1799999475479126, 0.23000000417232513],
    'c1_t': [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
    'c1_p': [[0.9789999723434448, 0.1860000044107437, 0.14900000393390656], [0.6990000009536743, 0.5709999799728394, 0.1379999965429306], [0.30000001192092896, 0.2280000001192093, 0.5070000290870667], [0.20200000703334808, 0.7269999980926514, 0.4970000088214874], [0.07599999755620956, 0.49399998784065247, 0.5910000205039978], [0.5080000162124634, 0.22499999403953552, 0.9380000233650208]],
    'c2_t': [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
    'c2_p': [[0.31700000166893005, 0.781000018119812, 0.1080000028014183], [0.8209999799728394, 0.6079999804496765, 0.8180000185966492], [0.14300000667572021, 0.44999998807907104, 0.8980000019073486], [0.8859999775886536, 0.31299999356269836, 0.7860000133514404], [0.6890000104904175, 0.39399999380111694, 0.7440000176429749]],
    'c2_w': [0.9399999976158142, 0.699999988079071, 0.7400000095367432, 1.8200000524520874, 0.8999999761581421],
}

KERAS = {
    'tp': (6.0, 9.360000610351562, 2.0),
    'fp': (0.0, 2.820000171661377, 3.0),
    'tn': (0.0, 2.4600000381469727, 4.0),
    'fn': (2.0, 2.9200000762939453, 3.0),
    'tp_list': ([8.0, 8.0, 6.0, 1.0], [12.280000686645508, 11.780000686645508, 9.360000610351562, 1.0], [5.0, 3.0, 2.0, 0.0]),
    'fp_list': ([0.0, 0.0], [2.8500001430511475, 2.820000171661377], [4.0, 3.0]),
    'tn_even': ([0.0, 0.0, 0.0], [4.76837158203125e-07, 2.460000514984131, 5.280000686645508], [0.0, 4.0, 7.0]),
    'fn_list': ([0.0, 5.0], [0.5, 7.300000190734863], [2.0, 4.0]),
    'tp_07': (3.0, 4.980000019073486, 1.0),
    'mape': (51.53438186645508, 71.10624694824219, 71.76072692871094),
    'msle': (0.07988962531089783, 0.08532388508319855, 0.07202036678791046),
    'rmse': (0.433897465467453, 0.43903928995132446, 0.39609530568122864),
    'cos': (0.8625441193580627, 0.8623768091201782, 0.8947453498840332),
    'cos_axis0': (0.8858630061149597, 0.812142550945282, 0.7384220957756042),
    'f1_none': ([0.6666666269302368, 0.666666567325592, 0.0], [0.818840503692627, 0.7950818538665771, 0.522292971611023], [1.0, 0.9999998211860657, 1.0]),
    'f1_micro': (0.4999999403953552, 0.7297296524047852, 1.0),
    'f1_macro': (0.4444444179534912, 0.7120717763900757, 0.9999999403953552),
    'f1_weighted': (0.6666666269302368, 0.7687334418296814, 1.0),
    'f1_thr': (0.3571428060531616, 0.5536673069000244, 0.7111110687255859),
    'fbeta_none': ([0.5555555820465088, 0.5555555820465088, 0.0], [0.7385621070861816, 0.7080292105674744, 0.7321428060531616], [1.0, 0.9999998807907104, 1.0]),
    'fbeta_weighted': (0.5357142090797424, 0.5526441335678101, 0.5848595499992371),
    'fbeta_micro': (0.4411764442920685, 0.5954131484031677, 0.7575756907463074),
    'mean': (2.0, 2.5833332538604736),
    'sum': (6.0, 25.0),
    'mean_w2d': 3.0,
    'sum_scalar': 7.0,
}


CASES = {
    "tp": lambda: M.TruePositives(), "fp": lambda: M.FalsePositives(),
    "tn": lambda: M.TrueNegatives(), "fn": lambda: M.FalseNegatives(),
    "tp_list": lambda: M.TruePositives(thresholds=[0.0, 0.3, 0.5, 0.95]),
    "fp_list": lambda: M.FalsePositives(thresholds=[0.3, 0.5]),
    "tn_even": lambda: M.TrueNegatives(thresholds=[0.0, 0.5, 1.0]),
    "fn_list": lambda: M.FalseNegatives(thresholds=[0.2, 0.7]),
    "tp_07": lambda: M.TruePositives(thresholds=0.7),
    "mape": lambda: M.MeanAbsolutePercentageError(),
    "msle": lambda: M.MeanSquaredLogarithmicError(),
    "rmse": lambda: M.RootMeanSquaredError(),
    "cos": lambda: M.CosineSimilarity(),
    "cos_axis0": lambda: M.CosineSimilarity(axis=0),
    "f1_none": lambda: M.F1Score(),
    "f1_micro": lambda: M.F1Score(average="micro"),
    "f1_macro": lambda: M.F1Score(average="macro"),
    "f1_weighted": lambda: M.F1Score(average="weighted"),
    "f1_thr": lambda: M.F1Score(average="macro", threshold=0.5),
    "fbeta_none": lambda: M.FBetaScore(beta=2.0),
    "fbeta_weighted": lambda: M.FBetaScore(average="weighted", beta=0.5, threshold=0.4),
    "fbeta_micro": lambda: M.FBetaScore(average="micro", beta=2.0, threshold=0.3),
}
_DATA = {"tp": "b", "fp": "b", "tn": "b", "fn": "b", "tp_list": "b", "fp_list": "b",
         "tn_even": "b", "fn_list": "b", "tp_07": "b", "mape": "r", "msle": "r", "rmse": "r",
         "cos": "r", "cos_axis0": "r0"}


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want),
                               rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("key", sorted(CASES))
def test_matches_keras(key):
    d = _DATA.get(key, "c")
    pre = d[0]
    b1 = [np.array(DATA[pre + "1_t"], "f"), np.array(DATA[pre + "1_p"], "f")]
    b2 = [np.array(DATA[pre + "2_t"], "f"), np.array(DATA[pre + "2_p"], "f")]
    w2 = None if d == "r0" else np.array(DATA[pre + "2_w"], "f")
    one, two, alone = KERAS[key]
    m = CASES[key]()
    m.update_state(*b1)
    _close(m.result(), one)
    assert np.shape(m.result()) == np.shape(one)
    m.update_state(*b2, sample_weight=w2)
    _close(m.result(), two)
    _close(m(*b2), alone)  # one batch, the state untouched
    _close(m.result(), two)
    m.reset_state()
    m.update_state(*b2)
    _close(m.result(), alone)


def test_mean_and_sum_match_keras():
    for cls, key in ((M.Mean, "mean"), (M.Sum, "sum")):
        m = cls()
        m.update_state([1.0, 2.0, 3.0])
        _close(m.result(), KERAS[key][0])
        m.update_state([[1.0, 2.0], [3.0, 5.0]], sample_weight=[1.0, 2.0])
        _close(m.result(), KERAS[key][1])
        m.reset_state()
        assert m.result() == 0.0
    m = M.Mean()
    m.update_state([[1.0, 2.0], [3.0, 5.0]], sample_weight=[[1.0, 0.0], [2.0, 1.0]])
    _close(m.result(), KERAS["mean_w2d"])
    m = M.Sum()
    m.update_state(4.0)
    m.update_state([1.5, 2.5], sample_weight=[2.0, 0.0])
    _close(m.result(), KERAS["sum_scalar"])


def test_names_and_aliases():
    assert M.TruePositives().name == "true_positives"
    assert M.FalseNegatives().name == "false_negatives"
    assert M.MeanAbsolutePercentageError().name == "mean_absolute_percentage_error"
    assert M.MeanSquaredLogarithmicError().name == "mean_squared_logarithmic_error"
    assert M.RootMeanSquaredError().name == "root_mean_squared_error"
    assert M.CosineSimilarity().name == "cosine_similarity"
    assert M.F1Score().name == "f1_score"
    assert M.FBetaScore().name == "fbeta_score"
    assert M.Mean().name == "mean" and M.Sum().name == "sum"
    assert isinstance(M.get("mape"), M.MeanAbsolutePercentageError)
    assert M.get("mape").name == "mape"
    assert isinstance(M.get("msle"), M.MeanSquaredLogarithmicError)
    assert isinstance(M.get("root_mean_squared_error"), M.RootMeanSquaredError)
    assert isinstance(M.get("cosine_similarity"), M.CosineSimilarity)
    assert isinstance(M.get("true_positives"), M.TruePositives)
    assert isinstance(M.get("f1_score"), M.F1Score)
    assert isinstance(M.get("FBetaScore"), M.FBetaScore)
    assert M.FBetaScore(beta=2.0).get_config()["beta"] == 2.0
    assert M.TruePositives([0.2, 0.4]).get_config()["thresholds"] == [0.2, 0.4]
    assert M.CosineSimilarity(axis=0).get_config()["axis"] == 0


@pytest.mark.parametrize("make, exc, words", [
    (lambda: M.TruePositives(thresholds=1.5), ValueError, ["TruePositives", "thresholds", "1.5"]),
    (lambda: M.FalsePositives(thresholds=[0.2, -0.1]), ValueError,
     ["FalsePositives", "thresholds", "[0, 1]"]),
    (lambda: M.TrueNegatives(thresholds="0.5"), TypeError, ["TrueNegatives", "thresholds"]),
    (lambda: M.FalseNegatives(thresholds=[]), ValueError, ["FalseNegatives", "thresholds"]),
    (lambda: M.FBetaScore(average="mean"), ValueError, ["FBetaScore", "average", "'mean'"]),
    (lambda: M.FBetaScore(beta=0.0), ValueError, ["FBetaScore", "beta", "> 0"]),
    (lambda: M.FBetaScore(beta="2"), TypeError, ["FBetaScore", "beta"]),
    (lambda: M.F1Score(threshold=0.0), ValueError, ["F1Score", "threshold", "(0, 1]"]),
    (lambda: M.F1Score(threshold=True), TypeError, ["F1Score", "threshold", "True"]),
    (lambda: M.CosineSimilarity(axis=1.0), TypeError, ["CosineSimilarity", "axis", "1.0"]),
    (lambda: M.Mean(name=""), TypeError, ["Mean", "name"]),
])
def test_bad_arguments(make, exc, words):
    with pytest.raises(exc) as info:
        make()
    for w in words:
        assert w in str(info.value)


def test_bad_shapes():
    with pytest.raises(ValueError, match="F1Score.*2-D"):
        M.F1Score().update_state(np.ones(3), np.ones(3))
    m = M.F1Score()
    m.update_state(np.eye(3), np.eye(3))
    with pytest.raises(ValueError, match="F1Score.*classes"):
        m.update_state(np.eye(2), np.eye(2))
    with pytest.raises(ValueError, match="TruePositives.*sample_weight"):
        M.TruePositives().update_state(np.ones((4, 1)), np.ones((4, 1)), sample_weight=[1, 2])


def _model(units):
    return tn.Sequential([tn.Input((4,)), tn.layers.Dense(units, activation="sigmoid")])


def test_compile_fit_evaluate():
    rng = np.random.default_rng(0)
    x = rng.random((40, 4)).astype("f")
    y = (rng.random((40, 3)) > 0.5).astype("f")
    metrics = [M.TruePositives(), "mape", "msle",
               M.RootMeanSquaredError(), M.CosineSimilarity(), M.F1Score(average="macro"),
               M.FBetaScore(average="micro", beta=2.0, threshold=0.5)]
    model = _model(3)
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=metrics)
    hist = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    for key in ("true_positives", "mape", "msle", "root_mean_squared_error",
                "cosine_similarity", "f1_score", "fbeta_score"):
        assert len(hist.history[key]) == 2 and np.all(np.isfinite(hist.history[key]))
    # counts restart each epoch: never more than one epoch's entries
    assert max(hist.history["true_positives"]) <= y.size
    logs = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    pred = model.predict(x, verbose=0)
    for name, fresh in (("true_positives", M.TruePositives()), ("mape", M.MeanAbsolutePercentageError()),
                        ("msle", M.MeanSquaredLogarithmicError()),
                        ("root_mean_squared_error", M.RootMeanSquaredError()),
                        ("cosine_similarity", M.CosineSimilarity()),
                        ("f1_score", M.F1Score(average="macro")),
                        ("fbeta_score", M.FBetaScore(average="micro", beta=2.0, threshold=0.5))):
        np.testing.assert_allclose(logs[name], fresh(y, pred), rtol=1e-5, atol=1e-6)


def test_save_and_load_keeps_the_metrics(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.random((16, 4)).astype("f")
    y = (rng.random((16, 3)) > 0.5).astype("f")
    model = _model(3)
    model.compile(optimizer="adam", loss="binary_crossentropy",
                  metrics=[M.TruePositives(thresholds=0.4), "mape",
                           M.FBetaScore(average="weighted", beta=2.0, threshold=0.5),
                           M.CosineSimilarity(axis=-1)])
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    want = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    path = str(tmp_path / "m.safetensors")
    model.save(path)
    loaded = tn.saving.load_model(path)
    got = loaded.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6)


# Edge cases (a zero label for MAPE, negative values for MSLE, scores outside [0, 1], a
# label rank one lower than the scores, column sample weights, a zero vector, argmax ties,
# int labels, a scalar weight): Keras 3.15.1's results rounded to 5 decimals, "ERR ..." where
# Keras raises.
KERAS_EDGE = {'mape_zero': 50000044.0, 'msle_neg': 0.40462, 'tp_out': [3.0, 2.0], 'tn_even_out': [1.0, 2.0, 3.0], 'fp_sw_col': 5.0, 'fn_rank': 1.0, 'rmse_rank': 0.80178, 'cos_zero': 0.4, 'f1_ties': [0.66667, 0.66667, 0.0], 'f1_int_labels': 0.5, 'mean_scalar_w': 2.33333, 'sum_2d': 6.5, 'mape_w2d': 'ERR ValueError'}


def _edge_results(M):
    out = {}
    def go(key, m, *batches):
        try:
            for b in batches: m.update_state(*b)
            out[key] = np.round(np.asarray(m.result(), dtype=np.float64), 5).tolist()
        except Exception as e:
            out[key] = "ERR " + type(e).__name__
    yt = np.array([[0., 1.], [2., 0.5], [1., 1.]], "f"); yp = np.array([[0.3, 1.2], [1.5, 0.], [1., 2.]], "f")
    go("mape_zero", M.MeanAbsolutePercentageError(), (yt, yp))
    go("msle_neg", M.MeanSquaredLogarithmicError(), (yt - 1, yp))
    go("tp_out", M.TruePositives([0.1, 0.9]), (np.array([1, 0, 1, 1], "f"), np.array([1.5, -0.2, 0.95, 0.5], "f")))
    go("tn_even_out", M.TrueNegatives([0., 0.5, 1.]), (np.array([1, 0, 0, 0], "f"), np.array([1.5, -0.2, 0.5, 0.6], "f")))
    go("fp_sw_col", M.FalsePositives(), (np.array([[0], [0], [1]], "f"), np.array([[0.9], [0.7], [0.8]], "f"), np.array([[2.], [3.], [1.]], "f")))
    go("fn_rank", M.FalseNegatives(), (np.array([1, 1, 0], "f"), np.array([[0.2], [0.7], [0.1]], "f")))
    go("rmse_rank", M.RootMeanSquaredError(), (np.array([1, 2, 3], "f"), np.array([[1.5], [2.], [2.]], "f"), np.array([1., 0.5, 2.], "f")))
    go("cos_zero", M.CosineSimilarity(), (np.array([[0., 0.], [1., 2.]], "f"), np.array([[1., 1.], [2., 1.]], "f")))
    go("f1_ties", M.F1Score(), (np.array([[1, 0, 0], [0, 1, 0]], "f"), np.array([[0.5, 0.5, 0.1], [0.2, 0.2, 0.2]], "f")))
    go("f1_int_labels", M.F1Score(average="weighted", threshold=0.3), (np.array([[1, 0, 1], [0, 1, 0]], "int32"), np.array([[0.5, 0.4, 0.1], [0.2, 0.6, 0.2]], "f"), np.array([2., 1.], "f")))
    go("mean_scalar_w", M.Mean(), (np.array([1., 2., 4.], "f"), 2.0))
    go("sum_2d", M.Sum(), (np.array([[1., 2.], [3., 4.]], "f"), np.array([1., 0.5], "f")))
    go("mape_w2d", M.MeanAbsolutePercentageError(), (yt + 1, yp, np.array([[1., 2.], [0.5, 0.5], [1., 0.]], "f")))
    return out

@pytest.mark.parametrize("key", sorted(KERAS_EDGE))
def test_edge_cases_match_keras(key):
    got = _EDGE[key]
    want = KERAS_EDGE[key]
    if isinstance(want, str):
        assert got == want
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)


_EDGE = _edge_results(M)


def test_array_results_are_logged_per_class_in_fit():
    """F1Score(average=None) and a list of thresholds give arrays, logged as Keras does."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 5)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 32)]
    tn.set_seed(0)
    model = tn.Sequential([tn.layers.Input((5,)), tn.layers.Dense(3, activation="softmax")])
    model.compile("adam", "categorical_crossentropy",
                  metrics=[tn.metrics.F1Score(), tn.metrics.TruePositives(thresholds=[0.3, 0.6])])
    history = model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    assert history.history["f1_score"][0].shape == (3,)
    assert history.history["true_positives"][0].shape == (2,)
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    ref = tn.metrics.F1Score()
    ref.update_state(y, model.predict(x, verbose=0))
    np.testing.assert_allclose(logs["f1_score"], np.asarray(ref.result()), rtol=1e-6)
