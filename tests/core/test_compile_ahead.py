"""The first fit on an empty cache compiles with a helper process (which then completes the
cache and ends by itself), and changes no bit; processes sharing a cache compile each
kernel once (tinynet.kernels._jit's locks)."""

import os
import subprocess
import sys
import threading

import pytest

from tests.helpers.kernel_cache import COUNT_COMPILES, wait_for_helpers
from tinynet.tools import compile_ahead
from tinynet.tools.compile_ahead import _batch_sizes

FIT = """
import hashlib, sys
import numpy as np
import tinynet as tn
from tinynet.tools import compile_ahead
from tinynet.layers import Dense, Input
compile_ahead.set_enabled(sys.argv[1] != "off")
kinds = []  # the kind of helper each start made: a fork or a new interpreter
if sys.argv[1] == "spawn":
    compile_ahead._can_fork = lambda: False
for name in ("_fork", "_spawn"):
    made = getattr(compile_ahead, name)
    def record(*args, _made=made, _name=name):
        kinds.append(_name)
        return _made(*args)
    setattr(compile_ahead, name, record)
tn.set_seed(0)
x = np.random.default_rng(0).standard_normal((37, 6)).astype(np.float32)
y = (x[:, 0] > 0).astype(np.int64)
model = tn.Sequential([Input((6,)), Dense(8, activation="relu"), Dense(2)])
model.compile(optimizer=tn.optimizers.Adam(1e-2),
              loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_data=(x[:9], y[:9]))
digest = hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights())).hexdigest()
print(digest, compile_ahead._started, compile_ahead._helper is None, ",".join(kinds) or "-")
"""


def _fit(cache, mode: str) -> list[str]:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    env.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run([sys.executable, "-c", FIT, mode], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_a_cold_fit_starts_one_helper_ends_it_and_gives_the_same_bits(tmp_path):
    try:
        forked = _fit(tmp_path / "a", "on")
        without = _fit(tmp_path / "b", "off")
        spawned = _fit(tmp_path / "c", "spawn")
        warm = _fit(tmp_path / "a", "on")
    finally:  # the helpers go on after their fits, completing the caches
        for cache in ("a", "c"):
            wait_for_helpers(tmp_path / cache)
    expected_kind = "_fork" if sys.platform.startswith("linux") else "_spawn"
    # started, gone after the fit, the same weights
    assert forked == [without[0], "True", "True", expected_kind]
    assert spawned == [without[0], "True", "True", "_spawn"]
    assert without[1:] == ["False", "True", "-"]
    assert warm == [without[0], "False", "True", "-"]  # a warm cache starts no helper


def test_a_forked_helper_completes_the_cache_only_once_its_fit_has_ended():
    # the fork's run waits on a pipe whose write end the fit closes as it ends
    read_end, write_end = os.pipe()
    closed: list[bool] = []

    def end_fit() -> None:
        closed.append(True)
        os.close(write_end)

    timer = threading.Timer(0.2, end_fit)
    timer.start()
    compile_ahead._wait_for_fit(read_end)
    seen = list(closed)
    timer.join()
    assert seen == [True]
    with pytest.raises(OSError):
        os.fstat(read_end)  # the helper closed its end too


def test_the_fit_closes_its_end_of_the_helper_pipe_as_it_ends(monkeypatch):
    read_end, write_end = os.pipe()
    monkeypatch.setattr(compile_ahead, "_fit_ends", write_end)
    compile_ahead._detach()
    assert compile_ahead._fit_ends is None
    assert os.read(read_end, 1) == b""  # end of file: no writer left
    os.close(read_end)


def test_batch_sizes_are_those_a_pass_sees():
    assert _batch_sizes(37, 16) == [16, 5]
    assert _batch_sizes(32, 16) == [16]
    assert _batch_sizes(5, 16) == [5]
    assert _batch_sizes(0, 16) == []


def test_set_enabled_takes_a_bool():
    assert compile_ahead.is_enabled() is False  # tests/conftest.py turns it off
    with pytest.raises(TypeError, match=r"^compile_ahead.set_enabled: enabled must be a "
                                        r"bool, got 'yes'$"):
        compile_ahead.set_enabled("yes")


LOCKED = COUNT_COMPILES + """
import fcntl, os, sys
import numpy as np
from tinynet.kernels import _jit
from tinynet.kernels.pooling import max_fwd_serial as kernel
x = np.zeros((1, 2, 2, 1), np.float32)
out = np.zeros((1, 1, 1, 1), np.float32)
arg = np.zeros((1, 1, 1, 1), np.int32)
b = np.zeros(1, np.int64)
args = (x, out, arg, b, b + 2, b, b + 2, 0, 1)
if sys.argv[1] == "busy":  # another process holds the kernel's lock
    sig = tuple(kernel.typeof_pyval(a) for a in args)
    path = _jit.lock_path(kernel, sig)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    other = os.fork()
    if other == 0:
        with open(path, "a+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            os.write(1, b"")
            import time; time.sleep(30)
        os._exit(0)
    import time; time.sleep(1.0)
    _jit.WAIT_FOR_BUSY_KERNELS = False
    try:
        kernel(*args)
        print("compiled")
    except _jit.KernelBusy as exc:
        print("busy:", exc)
    finally:
        os.kill(other, 9)
else:
    kernel(*args)
    print(sum(name == "max_fwd_serial" for name in compiles))
"""


def _locked(cache, mode: str) -> subprocess.Popen:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    env.pop("NUMBA_DISABLE_JIT", None)
    return subprocess.Popen([sys.executable, "-c", LOCKED, mode], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.skipif(sys.platform == "win32", reason="compile locks need fcntl")
def test_two_processes_sharing_a_cache_compile_a_kernel_once(tmp_path):
    runs = [_locked(tmp_path, "run") for _ in range(2)]
    counts = []
    for run in runs:
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err
        counts.append(int(out))
    assert sorted(counts) == [0, 1]


@pytest.mark.skipif(sys.platform == "win32", reason="compile locks need fcntl")
def test_a_busy_kernel_raises_where_waiting_is_off(tmp_path):
    out, err = _locked(tmp_path, "busy").communicate(timeout=600)
    assert out.strip() == "busy: max_fwd_serial is being compiled by another process", err


GC = """
import gc, sys
import numpy as np
from tinynet.kernels.pooling import max_fwd_serial as kernel
x = np.zeros((1, 2, 2, 1), np.float32)
out = np.zeros((1, 1, 1, 1), np.float32)
arg = np.zeros((1, 1, 1, 1), np.int32)
b = np.zeros(1, np.int64)
if sys.argv[1] == "frozen":
    gc.freeze()
kernel(x, out, arg, b, b + 2, b, b + 2, 0, 1)
cres = next(iter(kernel.overloads.values()))
print(gc.isenabled(), gc.get_freeze_count() > 0, cres.type_annotation, cres.metadata)
"""


@pytest.mark.parametrize("mode", ["plain", "frozen"])
def test_a_compile_leaves_the_garbage_collector_as_it_found_it(tmp_path, mode):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run([sys.executable, "-c", GC, mode], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    # on, with the program's own frozen objects still frozen and no other; the kernel
    # keeps what a cache load keeps (no typed IR, no compile metadata)
    assert out.stdout.split() == ["True", str(mode == "frozen"), "None", "None"]


NESTED = """
import fcntl, os, select, sys
from tinynet.kernels import _jit
from tinynet.kernels.pooling import max_fwd_serial as kernel
path = os.path.join(sys.argv[2], "held.lock")
released = os.path.join(sys.argv[2], "released")
_jit.lock_path = lambda dispatcher, sig: path
held_r, held_w = os.pipe()
done_r, done_w = os.pipe()
other = os.fork()
if other == 0:  # another process compiling the kernel: holds its lock until told (or 2 s)
    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        os.write(held_w, b"x")
        select.select([done_r], [], [], 2.0)
        open(released, "w").close()
    os._exit(0)
os.read(held_r, 1)
_jit.WAIT_FOR_BUSY_KERNELS = False
_jit._depth = int(sys.argv[1])  # compiles already under way in this process
try:
    with _jit._compile_lock(kernel, ()):
        # the lock came only once the other process had let it go
        print("waited" if os.path.exists(released) else "did not wait")
except _jit.KernelBusy as exc:
    print("busy:", exc)
os.write(done_w, b"x")
os.waitpid(other, 0)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="compile locks need fcntl")
@pytest.mark.parametrize("depth, expected", [
    (0, "busy: max_fwd_serial is being compiled by another process"),
    (1, "waited"),  # a nested compile waits: giving up would waste the outer one's work
])
def test_only_an_outermost_compile_gives_up_on_a_busy_kernel(tmp_path, depth, expected):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run([sys.executable, "-c", NESTED, str(depth), str(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected


ORDER = """
import os
from tinynet.tools import compile_ahead
from tinynet.kernels import completion
calls = []
completion.hold_completion_lock = lambda: True
compile_ahead._tasks = lambda spec: []
compile_ahead._drain = lambda tasks: calls.append("drain")
lower = compile_ahead._lower_priority
compile_ahead._lower_priority = lambda: (calls.append("nice"), lower())
before = os.getpriority(os.PRIO_PROCESS, 0)
compile_ahead.run({"gates": {}, "threads": 1})
print(" ".join(calls), os.getpriority(os.PRIO_PROCESS, 0) - before)
"""


@pytest.mark.skipif(not hasattr(os, "nice"), reason="no os.nice on this platform")
def test_the_helper_completes_the_cache_at_a_lower_priority():
    """The tasks ahead of the fit run at the fit's priority; the completion passes (every
    gate serial, then parallel) after lowering it by COMPLETION_NICENESS (capped at 19)."""
    out = subprocess.run([sys.executable, "-c", ORDER], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    calls, raised = out.stdout.rsplit(" ", 1)
    assert calls == "drain nice drain drain"
    start = os.getpriority(os.PRIO_PROCESS, 0)
    assert int(raised) == min(compile_ahead.COMPLETION_NICENESS, 19 - start)


def test_no_fork_once_a_library_with_its_own_thread_pools_is_loaded(monkeypatch):
    """With PyTorch (or TensorFlow, JAX) loaded, the helper is a new interpreter: a fork
    could inherit a lock one of their pool threads held, and wait on it forever."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the helper is a fork only on Linux")
    for name in compile_ahead.FORK_UNSAFE_MODULES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr("numba.np.ufunc.parallel._is_initialized", False)
    assert compile_ahead._can_fork()
    for name in compile_ahead.FORK_UNSAFE_MODULES:
        with monkeypatch.context() as m:
            m.setitem(sys.modules, name, object())
            assert not compile_ahead._can_fork()
