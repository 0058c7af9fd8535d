"""``import tinynet`` on a cold kernel cache forks one early helper that compiles a small
training step's kernels while the program imports and loads its data
(tinynet.tools.compile_early); a primed cache, a running completion or the switch start
nothing; the helper ends with its list, with its parent, or when a fit's helper takes
over, and changes no bit."""

import os
import subprocess
import sys
import time

import pytest

from tests.helpers.kernel_cache import COUNT_COMPILES, wait_for_helpers
from tinynet.tools import compile_ahead, primed

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the helper is a fork"),
    pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1",
                       reason="nothing compiles without the JIT"),
]


def _env(cache, on: bool = True) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TINYNET_COMPILE_AHEAD", "NUMBA_DISABLE_JIT")}
    env["NUMBA_CACHE_DIR"] = str(cache)
    if not on:
        env["TINYNET_COMPILE_AHEAD"] = "0"
    return env


def _python(code: str, env: dict, *args: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def _gone(pid: int) -> bool:
    """Waits (up to 10 minutes) for process ``pid`` to end (a zombie has ended); whether
    it did."""
    for _ in range(6000):
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


IMPORT = """
import os, sys
import tinynet
from tinynet.tools import primed
pid = primed.helper_pid()
if pid and sys.argv[1] == "wait":
    os.waitpid(pid, 0)
print(pid or 0, primed.is_primed(), primed.marker_path())
"""

HEAD = COUNT_COMPILES + """
from tinynet.tools import compile_ahead
compile_ahead._drain(compile_ahead._tasks(compile_ahead._head_spec()))
print(len(compiles))
"""


def test_a_cold_import_primes_the_cache_once(tmp_path):
    """The helper runs to the end of its list and marks the cache: the head's training
    step then compiles nothing, and a later import starts no helper."""
    assert _python(IMPORT, _env(tmp_path / "off", on=False), "wait")[:2] == ["0", "False"]
    pid, primed, marker = _python(IMPORT, _env(tmp_path), "wait")
    assert int(pid) > 0 and primed == "True" and marker.startswith(str(tmp_path))
    assert _python(HEAD, _env(tmp_path, on=False)) == ["0"]
    assert _python(IMPORT, _env(tmp_path), "wait")[:2] == ["0", "True"]


def test_the_early_helper_ends_with_the_process_that_started_it(tmp_path):
    pid, primed, marker = _python(IMPORT, _env(tmp_path), "exit")  # it ends at once
    assert int(pid) > 0 and primed == "False"
    assert _gone(int(pid))
    assert not os.path.exists(marker)  # it stopped before the end of its list


WANTED = """
import fcntl, os, sys
import tinynet  # TINYNET_COMPILE_AHEAD=0 here: no helper of this import
from tinynet.tools import compile_early, primed
os.environ["TINYNET_COMPILE_AHEAD"] = "1"
seen = [compile_early._wanted()]
lock = os.path.join(primed.cache_folder(), "locks", "completing")
os.makedirs(os.path.dirname(lock), exist_ok=True)
with open(lock, "a+b") as fh:  # a fit's helper completing the cache
    fcntl.flock(fh, fcntl.LOCK_EX)
    seen.append(compile_early._wanted())
seen.append(compile_early._wanted())
sys.modules["torch"] = object()  # a library whose thread pools make a fork unsafe
seen.append(compile_early._wanted())
del sys.modules["torch"]
import threading  # another thread running: a fork would keep the locks it holds
gate = threading.Event()
other = threading.Thread(target=gate.wait)
other.start()
seen.append(compile_early._wanted())
gate.set()
other.join()
os.environ["NUMBA_DISABLE_JIT"] = "1"
seen.append(compile_early._wanted())
del os.environ["NUMBA_DISABLE_JIT"]
primed.mark_primed()
seen.append(compile_early._wanted())
from tinynet.kernels import completion  # Numba's own idea of the folder
folder = os.path.dirname(os.path.dirname(completion.completion_lock_path()))
print(*seen, folder == primed.cache_folder())
"""


def test_only_a_cold_cache_with_no_completion_under_way_starts_a_helper(tmp_path):
    # cold; completing; cold again; torch loaded; a thread; no JIT; primed; the folder
    # is Numba's
    assert _python(WANTED, _env(tmp_path, on=False)) == [
        "True", "False", "True", "False", "False", "False", "False", "True"]


SPAWNED = """
import multiprocessing
import tinynet  # the main module imports tinynet: a spawned worker does while it starts
from tinynet.tools import primed

def helper(_):
    return primed.helper_pid() or 0

if __name__ == "__main__":
    pid = primed.helper_pid()
    primed.stop()
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        print(*pool.map(helper, range(2)))
    if pid:
        os.waitpid(pid, 0)
"""


def test_a_spawned_pool_worker_starts_no_helper(tmp_path):
    # as the warmup's workers: tinynet is imported before parent_process() is set
    script = tmp_path / "spawned.py"
    script.write_text("import os" + SPAWNED)
    out = subprocess.run([sys.executable, str(script)], env=_env(tmp_path / "cache"),
                         capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "0"]


def test_the_switch_and_a_fit_stop_the_early_helper(monkeypatch):
    stopped = []
    monkeypatch.setattr(primed, "stop", lambda: stopped.append(True))
    compile_ahead.set_enabled(False)
    assert stopped == [True]


FIT = """
import hashlib, os
import numpy as np
import tinynet as tn
from tinynet.tools import primed
from tinynet.layers import Dense, Input
early = primed.helper_pid() or 0
tn.set_seed(0)
x = np.random.default_rng(0).standard_normal((37, 6)).astype(np.float32)
y = (x[:, 0] > 0).astype(np.int64)
model = tn.Sequential([Input((6,)), Dense(8, activation="relu"), Dense(2)])
model.compile(optimizer=tn.optimizers.Adam(1e-2),
              loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=16, epochs=2, verbose=0)
if primed.helper_pid():  # not reaped at the fit's end yet: it ends after its kernel
    os.waitpid(primed.helper_pid(), 0)
print(hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights())).hexdigest(),
      early > 0)
"""


def test_a_cold_fit_after_an_early_helper_gives_the_same_bits(tmp_path):
    try:
        with_early = _python(FIT, _env(tmp_path / "a"))
        without = _python(FIT, _env(tmp_path / "b", on=False))
    finally:
        wait_for_helpers(tmp_path / "a")
    assert with_early == [without[0], "True"]
    assert without[1] == "False"
