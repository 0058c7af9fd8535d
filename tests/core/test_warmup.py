"""python -m tinynet.warmup compiles (or loads) every kernel family and exits 0; --help
lists its options."""

import os
import subprocess
import sys

import pytest


def test_warmup_runs():
    from tinynet.warmup import warmup

    assert warmup(verbose=False) >= 0.0


def test_warmup_module_cli():
    out = subprocess.run([sys.executable, "-m", "tinynet.warmup"], capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("tinynet kernels ready in ")
    bad = subprocess.run([sys.executable, "-m", "tinynet.warmup", "x"], capture_output=True,
                         text=True, timeout=300)
    assert bad.returncode == 2 and "usage: python -m tinynet.warmup" in bad.stderr
    assert "unrecognized arguments: x" in bad.stderr


def test_warmup_help_lists_the_options():
    env = {k: v for k, v in os.environ.items() if k != "FORCE_COLOR"}
    env.update(COLUMNS="100", NO_COLOR="1")  # argparse's line width; no colours (3.14)
    out = subprocess.run([sys.executable, "-m", "tinynet.warmup", "--help"],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    help_text = out.stdout
    assert help_text.startswith("usage: python -m tinynet.warmup [-h] [--workers N] [-q]")
    assert "Compile (or load from Numba's cache) every tinynet kernel once" in help_text
    assert "--workers N  worker processes compiling at once" in help_text
    assert "-q, --quiet  no progress bar and no closing line" in help_text
    assert "NUMBA_CACHE_DIR" in help_text


def test_warmup_main_passes_the_options(monkeypatch):
    from tinynet.tools import warmup as module

    calls = []
    monkeypatch.setattr(module, "warmup", lambda **kwargs: calls.append(kwargs) or 0.0)
    assert module.main([]) == 0
    assert module.main(["--workers", "3", "--quiet"]) == 0
    assert module.main(["-q"]) == 0
    assert calls == [{"verbose": True, "workers": None}, {"verbose": False, "workers": 3},
                     {"verbose": False, "workers": None}]


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_warmup_main_refuses_bad_worker_counts(value, capsys):
    from tinynet.tools import warmup as module

    with pytest.raises(SystemExit) as info:
        module.main(["--workers", value])
    assert info.value.code == 2
    assert f"argument --workers: must be a positive int, got {value!r}" in capsys.readouterr().err


def test_warmup_jobs_run_every_task_serial_first_then_parallel():
    from tinynet.tools.warmup import TASKS, _PARALLEL, _SERIAL, _jobs

    jobs = _jobs()
    assert sorted(jobs) == sorted((name, gate) for name in TASKS for gate in (_SERIAL, _PARALLEL))
    gates = [gate for _, gate in jobs]
    assert gates == sorted(gates, reverse=True)  # every serial task before any parallel one
    names = [name for name, _ in jobs[:len(TASKS)]]
    first = names.index("normalization 4 channels")  # the shared group kernels first
    assert all(names.index(f"normalization {c} channels") > first + 1 for c in (64, 128, 48))
    assert names[0] == "layer norm"  # the longest first
