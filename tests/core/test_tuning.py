"""tinynet.tuning: get/set/reset/override, sources, env, profile, threads, describe."""

import json
import os
import subprocess
import sys

import pytest

from tinynet import tuning


@pytest.fixture(autouse=True)
def _reset():
    tuning.reset()
    yield
    tuning.reset()


def test_defaults_and_get():
    d = tuning.defaults()
    assert d["gn_row_parallel_min_elems"] == 262_144
    assert d["gn_param_grad_parallel_min_elems"] == 2**62  # calibrated: the merge never pays
    assert {"bn_parallel_min_elems", "ln_parallel_min_elems"} <= set(d)
    assert tuning.gates() == d
    assert all(tuning.get(n) == v for n, v in d.items())


def test_set_reset_and_sources():
    tuning.set(gn_row_parallel_min_elems=5, bn_parallel_min_elems=0)
    assert tuning.get("gn_row_parallel_min_elems") == 5
    assert tuning.sources()["bn_parallel_min_elems"] == "set"
    tuning.reset("gn_row_parallel_min_elems")
    assert tuning.get("gn_row_parallel_min_elems") == 262_144
    assert tuning.get("bn_parallel_min_elems") == 0
    tuning.reset()
    assert tuning.gates() == tuning.defaults()


def test_override_restores_even_on_error():
    with pytest.raises(RuntimeError):
        with tuning.override(gn_row_parallel_min_elems=0):
            assert tuning.get("gn_row_parallel_min_elems") == 0
            raise RuntimeError("boom")
    assert tuning.get("gn_row_parallel_min_elems") == 262_144
    assert tuning.sources()["gn_row_parallel_min_elems"] == "default"


def test_unknown_gate_lists_valid_names():
    with pytest.raises(KeyError, match="unknown tuning gate 'nope'; valid gates: .*gn_row_parallel_min_elems"):
        tuning.get("nope")
    with pytest.raises(KeyError, match="'nope'"):
        tuning.set(nope=1)
    with pytest.raises(KeyError):
        tuning.reset("nope")


def test_bad_values():
    with pytest.raises(ValueError, match=r"tuning gate gn_row_parallel_min_elems \(tuning.set\): value must be >= 0, got -1"):
        tuning.set(gn_row_parallel_min_elems=-1)
    with pytest.raises(TypeError, match="value must be a non-negative int, got 1.5 of type float"):
        tuning.set(gn_row_parallel_min_elems=1.5)
    with pytest.raises(TypeError):
        tuning.set(gn_row_parallel_min_elems=True)
    assert tuning.get("gn_row_parallel_min_elems") == 262_144


def test_threads():
    assert tuning.get_num_threads() == tuning.max_threads()
    tuning.set_num_threads(1)
    assert tuning.get_num_threads() == 1
    assert not tuning.use_parallel("gn_row_parallel_min_elems", 2**40)
    with pytest.raises(ValueError, match=r"num_threads \(set_num_threads\): expected 1 <= n <= \d+, got 0"):
        tuning.set_num_threads(0)
    with pytest.raises(TypeError, match="expected an int, got '2'"):
        tuning.set_num_threads("2")


def test_use_parallel_respects_gate():
    tuning.set(bn_parallel_min_elems=100)
    assert not tuning.use_parallel("bn_parallel_min_elems", 99)
    assert tuning.use_parallel("bn_parallel_min_elems", 100) == (tuning.get_num_threads() > 1)


@pytest.mark.skipif(tuning.max_threads() < 2, reason="needs 2 threads")
def test_use_parallel_sets_numbas_thread_count_once_per_setting():
    import numba

    tuning.set_num_threads(2)
    numba.set_num_threads(1)
    assert tuning.use_parallel("gn_row_parallel_min_elems", 2**40)
    assert numba.get_num_threads() == 2  # set on the first parallel launch
    numba.set_num_threads(1)  # behind tinynet's back: not asked again on every launch
    assert tuning.use_parallel("gn_row_parallel_min_elems", 2**40)
    assert numba.get_num_threads() == 1
    tuning.set_num_threads(2)  # any set_num_threads call (or reset) makes it look again
    assert tuning.use_parallel("gn_row_parallel_min_elems", 2**40)
    assert numba.get_num_threads() == 2
    numba.set_num_threads(1)
    tuning.reset()
    assert tuning.use_parallel("gn_row_parallel_min_elems", 2**40)
    assert numba.get_num_threads() == tuning.max_threads()


def test_describe_table():
    tuning.set(ln_parallel_min_elems=7)
    text = tuning.describe()
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["gate", "value", "default", "source"]
    row = next(line for line in lines if line.startswith("ln_parallel_min_elems"))
    assert row.split()[1:4] == ["7", str(tuning.defaults()["ln_parallel_min_elems"]), "set"]
    assert "num_threads" in text


def _run(code, **env):
    full = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full)


def test_environment_and_profile(tmp_path):
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"gates": {"gn_row_parallel_min_elems": 11,
                                             "bn_parallel_min_elems": 12},
                                   "num_threads": 1}))
    code = ("from tinynet import tuning; s = tuning.sources(); "
            "print(tuning.get('gn_row_parallel_min_elems'), tuning.get('bn_parallel_min_elems'), "
            "s['gn_row_parallel_min_elems'], s['bn_parallel_min_elems'], tuning.get_num_threads())")
    out = _run(code, TINYNET_TUNING_FILE=str(profile), TINYNET_BN_PARALLEL_MIN_ELEMS="99")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["11", "99", "profile", "env", "1"]
    out = _run(code, TINYNET_NUM_THREADS="1")
    assert out.stdout.split()[-1] == "1"


def test_bad_environment_value():
    out = _run("from tinynet import tuning; tuning.gates()", TINYNET_LN_PARALLEL_MIN_ELEMS="lots")
    assert out.returncode != 0
    assert "TINYNET_LN_PARALLEL_MIN_ELEMS='lots': expected a non-negative integer" in out.stderr


def test_profile_with_unknown_gate(tmp_path):
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"gates": {"bogus": 1}}))
    out = _run("from tinynet import tuning; tuning.gates()", TINYNET_TUNING_FILE=str(profile))
    assert out.returncode != 0 and "unknown tuning gate 'bogus'" in out.stderr


def test_module_prints_describe():
    out = subprocess.run([sys.executable, "-m", "tinynet.tuning"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "gn_param_grad_parallel_min_elems" in out.stdout


def test_import_compiles_nothing():
    code = ("import sys, tinynet, tinynet.layers; from tinynet.layers import GroupNormalization; "
            "from numba.core.registry import CPUDispatcher; import gc; "
            "n = sum(1 for o in gc.get_objects() if isinstance(o, CPUDispatcher) and o.signatures); "
            "print(n)")
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"


def test_every_environment_read_goes_through_tuning():
    """No module but tinynet.tuning reads os.environ (a child process's environment is
    built from it, which is not a read)."""
    import re
    from pathlib import Path

    root = Path(tuning.__file__).resolve().parents[1]
    readers = []
    for path in root.rglob("*.py"):
        if "tuning" in path.parts or "__pycache__" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"os\.environ(\.get|\[)|os\.getenv|environ\.get\(", text):
            readers.append(str(path.relative_to(root)))
    assert readers == []


def test_env_names_only_the_variables_it_documents():
    import pytest

    assert tuning.env("COLUMNS") is None or isinstance(tuning.env("COLUMNS"), str)
    with pytest.raises(KeyError, match="tinynet reads no environment variable 'HOME'"):
        tuning.env("HOME")
