"""A run says that it compiles kernels, once, before it compiles; a warm run says
nothing, and a later run that does compile (a kernel the cache lacks) says it again."""

import os
import subprocess
import sys

CODE = ("from tinynet.kernels.normalization.layout import span_reps, span_count\n"
        "assert span_reps(16) == 32 and span_count(0, 5, 2) == 3\n")


MORE = CODE + "from tinynet.kernels.normalization.layout import row_floats\n" \
              "assert row_floats(0) > 0\n"


def _run(cache, code: str = CODE) -> str:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    env.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
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


def test_a_later_run_that_compiles_says_so_again(tmp_path):
    _run(tmp_path)
    later = _run(tmp_path, MORE)  # one kernel more than the first run compiled
    assert later.count("tinynet: compiling kernels for first use") == 1, later
    assert "compiling" not in _run(tmp_path, MORE)
