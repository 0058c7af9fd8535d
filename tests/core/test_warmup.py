"""python -m tinynet.warmup compiles (or loads) every kernel family and exits 0."""

import subprocess
import sys


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
