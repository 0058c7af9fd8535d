"""Start-up: what a new user's first run costs in kernel compilation.

Run: python benchmarks/startup.py [--reps 3] [--top 25] [--skip-warmup]

On a fresh, empty ``NUMBA_CACHE_DIR`` it times, each as a whole process:

- the README's main command (``python examples/train_digits_cnn.py``) cold (each on a
  new empty cache) and warm (on the cache the first cold run left), ``--reps`` of each,
  taken in turns (cold, warm, cold, warm, ...), so a drift of the machine's speed during
  the run reaches both sides alike; each side is the median of its runs;
- ``python -m tinynet.warmup`` on another empty cache (its worker processes included);

The cold runs' compile-ahead helpers go on after the example to complete the cache (every
serial and parallel variant of its kernels, tinynet.tools.compile_ahead): the benchmark
waits for them before the next run and reports when they ended. (A cold run's
``import tinynet`` also forks an early helper that compiles a small training step's
kernels before the fit, tinynet.tools.compile_early; the fit's window counts its
compiles among the helpers', those before the example's first compile apart.) Beside wall seconds it
reports CPU seconds (user + sys) of each run with every process it started, those helpers
included (the benchmark adopts them as a child subreaper on Linux), the figure to compare
on a machine that other work keeps busy.

It lists every kernel's compile seconds from Numba's compile events (kind
``numba:compile``), recorded inside the first cold run and the warmup: *total* is a
dispatcher's own compile with the helpers compiled inside it, *self* without them. The
figures the start-up issue asks for are printed last: cold / warm, warmup seconds, and
the slowest kernel.

The events are recorded by a ``sitecustomize`` put on the timed processes' path only
(their child processes inherit it), so tinynet itself carries no benchmark code.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "train_digits_cnn.py")
TRACE_ENV = "TINYNET_STARTUP_TRACE"  # the file every traced process appends its events to


def _name(dispatcher) -> str:
    fn = dispatcher.py_func
    module = fn.__module__.replace("tinynet.kernels.normalization.", "norm.")
    return f"{module}.{fn.__qualname__.replace('.<locals>', '')}"


def record(path: str) -> None:
    """Installs a compile-event recorder that appends each event to ``path`` as it ends
    (JSON lines, so several processes can share one file; a forked compile-ahead helper
    leaves with ``os._exit``, which runs no exit handler)."""
    from numba.core import event

    stack: list = []
    os.register_at_fork(after_in_child=stack.clear)  # the parent's compile is not ours

    class Recorder(event.Listener):
        def on_start(self, ev):
            stack.append([_name(ev.data["dispatcher"]), time.perf_counter(), 0.0, time.time(),
                          time.process_time(), 0.0])

        def on_end(self, ev):
            if not stack:
                return
            name, start, children, wall, cpu_start, cpu_children = stack.pop()
            total = time.perf_counter() - start
            cpu = time.process_time() - cpu_start
            if stack:
                stack[-1][2] += total
                stack[-1][5] += cpu
            row = {"kernel": name, "total": total, "self": total - children,
                   "cpu": cpu, "cpu_self": cpu - cpu_children,
                   "depth": len(stack), "args": str(ev.data.get("args"))[:120],
                   "pid": os.getpid(), "ppid": os.getppid(), "start": wall}
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")

    event.register("numba:compile", Recorder())


def _site(work: str) -> str:
    """A folder with a ``sitecustomize`` that installs :func:`record` in every Python
    process started with :data:`TRACE_ENV` set (the warmup's workers included)."""
    site = os.path.join(work, "site")
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "sitecustomize.py"), "w", encoding="utf-8") as fh:
        fh.write("import os, sys\n"
                 f"if os.environ.get({TRACE_ENV!r}):\n"
                 f"    sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
                 "    import startup\n"
                 f"    startup.record(os.environ[{TRACE_ENV!r}])\n")
    return site


def _adopt_orphans() -> bool:
    """Makes this process the child subreaper of its descendants (Linux): a helper that
    outlives the example is then this process's child, and its CPU time is counted."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _reap_all() -> None:
    """Waits for every adopted descendant still running (the cache-completing helpers)."""
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


class Run(NamedTuple):
    wall: float  # seconds until the command ended
    cpu: float  # CPU seconds (user + sys) of it and every process it started
    done: float  # seconds until its last process (a cache-completing helper) ended
    own_cpu: float  # CPU seconds of the command until it ended (without such a helper)


def _run(command: list[str], cache: str, trace: str | None, work: str,
         extra: dict | None = None) -> Run:
    """Times ``python COMMAND`` with ``cache`` as the Numba cache (and the environment
    variables ``extra``), and waits for the helpers it leaves completing the cache; with
    ``trace``, its compile events (and its child processes') go to that file."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, **(extra or {}))
    env.pop(TRACE_ENV, None)
    if trace:
        env[TRACE_ENV] = trace
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_site(work),
                                                          env.get("PYTHONPATH")]))
    cpu = _children_cpu()
    start = time.perf_counter()
    subprocess.run([sys.executable, *command], env=env, cwd=work, check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    own = _children_cpu() - cpu
    _reap_all()
    return Run(wall, _children_cpu() - cpu, time.perf_counter() - start, own)


def _gate_names() -> list[str]:
    """The tuning gates' names (asked of tinynet in a subprocess: the benchmark itself
    imports no tinynet)."""
    out = subprocess.run([sys.executable, "-c", "from tinynet import tuning; "
                          "print(' '.join(tuning.defaults()))"], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    return out.stdout.split()


def _events(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _table(events: list[dict], top: int) -> list[str]:
    merged: dict[str, list[float]] = {}
    for e in events:
        entry = merged.setdefault(e["kernel"], [0.0, 0.0, 0, 0.0])
        entry[0] += e["total"]
        entry[1] += e["self"]
        entry[2] += 1
        entry[3] += e.get("cpu_self", 0.0)
    rows = sorted(merged.items(), key=lambda kv: -kv[1][0])
    lines = ["| kernel | compiles | total s | self s | self CPU s |", "|---|---:|---:|---:|---:|"]
    for name, (total, own, count, cpu) in rows[:top]:
        lines.append(f"| `{name}` | {count} | {total:.2f} | {own:.2f} | {cpu:.2f} |")
    if len(rows) > top:
        rest = sum(v[1] for _, v in rows[top:])
        rest_cpu = sum(v[3] for _, v in rows[top:])
        lines.append(f"| {len(rows) - top} more | | | {rest:.2f} | {rest_cpu:.2f} |")
    return lines


def _processes(events: list[dict]) -> list[str]:
    """Per process (the example and its compile-ahead helper, or the warmup's workers):
    its compiles, their seconds, and when the first started and the last ended, in
    seconds from the first compile of any of them."""
    top = [e for e in events if e["depth"] == 0 and "pid" in e]
    if not top:
        return []
    origin = min(e["start"] for e in top)
    lines = ["| process | compiles | compile s | compile CPU s | first starts at s | "
             "last ends at s |", "|---|---:|---:|---:|---:|---:|"]
    for pid in sorted({e["pid"] for e in top}, key=lambda p: min(e["start"] for e in top
                                                                 if e["pid"] == p)):
        mine = [e for e in top if e["pid"] == pid]
        lines.append(f"| {pid} | {len(mine)} | {sum(e['total'] for e in mine):.1f} | "
                     f"{sum(e.get('cpu', 0.0) for e in mine):.1f} | "
                     f"{min(e['start'] for e in mine) - origin:.1f} | "
                     f"{max(e['start'] + e['total'] for e in mine) - origin:.1f} |")
    return lines


def _fit_window(events: list[dict], launched: float | None = None) -> str:
    """The first cold run's compiles up to the end of the example's own last compile (the
    fit's kernels; the helper's later, lower-priority completion excluded): each process's
    compile CPU seconds in that window, the figure to compare under load. The helpers are
    the fit's compile-ahead helper and the early one ``import tinynet`` starts on a cold
    cache (tinynet.tools.compile_early); with ``launched`` (the run's start, ``time.time()``)
    it also says when the example's first compile started and its last ended."""
    top = [e for e in events if e["depth"] == 0 and "cpu" in e]
    pids = {e["pid"] for e in top}
    # the helpers': a process whose parent compiled too (its later events may name the
    # benchmark as parent: the helper outlives the example and is adopted)
    helpers = {e["pid"] for e in top if e.get("ppid") in pids}
    own = [e for e in top if e["pid"] not in helpers]
    if not own or len(own) == len(top):
        return ""
    first = min(e["start"] for e in own)
    end = max(e["start"] + e["total"] for e in own)
    helper = [e for e in top if e not in own and e["start"] < end]
    early = [e for e in helper if e["start"] < first]
    when = (f"; the example's first compile starts at {first - launched:.1f} s, its last "
            f"ends at {end - launched:.1f} s after the launch" if launched else "")
    return (f"the fit's compiles: the example {sum(e['cpu'] for e in own):.1f} s CPU in "
            f"{len(own)} compiles ({end - first:.1f} s from its first to the end of its "
            f"last), its helpers {sum(e['cpu'] for e in helper):.1f} s CPU in "
            f"{len(helper)} compiles started before then, of which "
            f"{sum(e['cpu'] for e in early):.1f} s CPU in {len(early)} compiles before "
            f"the example's first{when}")


def _slowest(events: list[dict]) -> tuple[str, float]:
    """The slowest single compile of a kernel (one signature, helpers included)."""
    if not events:
        return "-", 0.0
    e = max(events, key=lambda r: r["total"])
    return e["kernel"], e["total"]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3,
                        help="cold runs and warm runs of the example (each)")
    parser.add_argument("--top", type=int, default=25, help="kernels listed per table")
    parser.add_argument("--skip-warmup", action="store_true")
    args = parser.parse_args(argv)

    work = tempfile.mkdtemp(prefix="tinynet-startup-")
    out = os.path.join(work, "out")
    example = [EXAMPLE, "--epochs", "15", "--out", out, "--verbose", "0"]
    adopted = _adopt_orphans()
    print(f"start-up benchmark in {work} (each cache starts empty)", flush=True)
    cache = os.path.join(work, "cache-example")  # the first cold run's: the warm runs'
    trace = os.path.join(work, "example.jsonl")
    colds: list[Run] = []
    warms: list[Run] = []
    launched = None
    for rep in range(max(args.reps, 1)):
        fresh = cache if rep == 0 else os.path.join(work, f"cache-cold-{rep}")
        launched = time.time() if rep == 0 else launched
        colds.append(_run(example, fresh, trace if rep == 0 else None, work))
        warms.append(_run(example, cache, None, work))
        print(f"  example cold {colds[-1].wall:.1f} s (CPU {colds[-1].own_cpu:.1f} s, with "
              f"the helper {colds[-1].cpu:.1f} s; cache complete at {colds[-1].done:.1f} s), "
              f"warm {warms[-1].wall:.2f} s (CPU {warms[-1].cpu:.2f} s)", flush=True)
    cold = statistics.median(r.wall for r in colds)
    warm_s = statistics.median(r.wall for r in warms)
    cold_cpu = statistics.median(r.cpu for r in colds)
    cold_own = statistics.median(r.own_cpu for r in colds)
    warm_cpu = statistics.median(r.cpu for r in warms)
    done = statistics.median(r.done for r in colds)
    warm_events = os.path.join(work, "warm.jsonl")
    names = _gate_names()
    for gate in (2**62, 0):  # every call serial, then every call parallel, whatever the load
        forced = {f"TINYNET_{name.upper()}": str(gate) for name in names}
        _run(example, cache, warm_events, work, dict(forced, TINYNET_ADAPTIVE_THREADS="0"))
    _run(example, cache, warm_events, work)
    recompiled = _events(warm_events)

    cpu_note = "" if adopted else " (without the helpers: no subreaper here)"
    lines = ["| run | seconds | / warm | CPU s | / warm |", "|---|---:|---:|---:|---:|",
             f"| `python examples/train_digits_cnn.py`, empty cache (median of "
             f"{len(colds)}) | {cold:.1f} | {cold / warm_s:.1f}x | {cold_own:.1f} | "
             f"{cold_own / warm_cpu:.1f}x |",
             f"| the same, until its helper completed the cache (median) | {done:.1f} | "
             f"{done / warm_s:.1f}x | {cold_cpu:.1f}{cpu_note} | {cold_cpu / warm_cpu:.1f}x |",
             f"| the same, warm cache (median of {len(warms)}) | {warm_s:.2f} | 1.0x | "
             f"{warm_cpu:.2f} | 1.0x |"]
    warmup_events: list[dict] = []
    if not args.skip_warmup:
        wtrace = os.path.join(work, "warmup.jsonl")
        wcache = os.path.join(work, "cache-warmup")
        wrun = _run(["-m", "tinynet.warmup"], wcache, wtrace, work)
        lines.append(f"| `python -m tinynet.warmup`, empty cache | {wrun.wall:.1f} | | "
                     f"{wrun.cpu:.1f} | |")
        again = _run(["-m", "tinynet.warmup"], wcache, None, work)
        lines.append(f"| `python -m tinynet.warmup`, warm cache | {again.wall:.1f} | | "
                     f"{again.cpu:.1f} | |")
        warmup_events = _events(wtrace)
    ex_events = _events(trace)
    name, secs = _slowest(ex_events + warmup_events)
    compile_s = sum(e["total"] for e in ex_events if e["depth"] == 0)
    print()
    print("\n".join(lines))
    print()
    print(f"Compile events in the example's first cold run: {len(ex_events)} compiles, "
          f"{compile_s:.1f} s in all; compiles in three warm runs (all gates serial, all "
          f"parallel, the defaults): {len(recompiled)}")
    print(_fit_window(ex_events, launched))
    print("\n".join(_processes(ex_events)))
    print("\n".join(_table(ex_events, args.top)))
    if warmup_events:
        total = sum(e["total"] for e in warmup_events if e["depth"] == 0)
        print()
        print(f"Compile events in the warmup (all processes): {len(warmup_events)} "
              f"compiles, {total:.1f} s of compile time in all")
        print("\n".join(_processes(warmup_events)))
        print("\n".join(_table(warmup_events, args.top)))
    print()
    print(f"slowest kernel compile: {secs:.1f} s ({name})")
    print(f"cold / warm: {cold / warm_s:.2f}x (runs: cold "
          f"{', '.join(f'{c.wall:.1f}' for c in colds)} s; warm "
          f"{', '.join(f'{w.wall:.2f}' for w in warms)} s); CPU cold / warm: "
          f"{cold_own / warm_cpu:.2f}x, {cold_cpu / warm_cpu:.2f}x with the helper (cold "
          f"{', '.join(f'{c.own_cpu:.1f}/{c.cpu:.1f}' for c in colds)} s; "
          f"warm {', '.join(f'{w.cpu:.2f}' for w in warms)} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
