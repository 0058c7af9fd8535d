"""A first run says that it compiles kernels, once, before it compiles; a warm run says
nothing."""

import os
import subprocess
import sys

CODE = ("from tinynet.layers.regularization.normalization.layout import span_reps, span_count\n"
        "assert span_reps(16) == 32 and span_count(0, 5, 2) == 3\n")


def _run(cache) -> str:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    env.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stderr


def test_first_compile_is_announced_once_and_a_warm_run_is_quiet(tmp_path):
    notice = (f"tinynet: compiling kernels for first use (cached in {tmp_path}"
              f"{os.sep}")
    cold = _run(tmp_path)
    assert cold.count("tinynet: compiling kernels for first use") == 1, cold
    assert notice in cold and cold.rstrip().endswith("; later runs skip this)"), cold
    assert "compiling" not in _run(tmp_path)
