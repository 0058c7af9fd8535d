"""Start-up: what a new user's first run costs in kernel compilation.

Run: python benchmarks/startup.py [--reps 3] [--top 25] [--skip-warmup]

On a fresh, empty ``NUMBA_CACHE_DIR`` it times, each as a whole process:

- the README's main command (``python examples/train_digits_cnn.py``) cold (each on a
  new empty cache) and warm (on the cache the first cold run left), ``--reps`` of each,
  taken in turns (cold, warm, cold, warm, ...), so a drift of the machine's speed during
  the run reaches both sides alike; each side is the median of its runs;
- ``python -m tinynet.warmup`` on another empty cache (its worker processes included);

and lists every kernel's compile seconds from Numba's compile events (kind
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
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "train_digits_cnn.py")
TRACE_ENV = "TINYNET_STARTUP_TRACE"  # the file every traced process appends its events to


def _name(dispatcher) -> str:
    fn = dispatcher.py_func
    module = fn.__module__.replace("tinynet.layers.regularization.normalization.", "norm.")
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
            stack.append([_name(ev.data["dispatcher"]), time.perf_counter(), 0.0, time.time()])

        def on_end(self, ev):
            if not stack:
                return
            name, start, children, wall = stack.pop()
            total = time.perf_counter() - start
            if stack:
                stack[-1][2] += total
            row = {"kernel": name, "total": total, "self": total - children,
                   "depth": len(stack), "args": str(ev.data.get("args"))[:120],
                   "pid": os.getpid(), "start": wall}
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


def _run(command: list[str], cache: str, trace: str | None, work: str) -> float:
    """Wall seconds of ``python COMMAND`` with ``cache`` as the Numba cache; with
    ``trace``, its compile events (and its child processes') go to that file."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    env.pop(TRACE_ENV, None)
    if trace:
        env[TRACE_ENV] = trace
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_site(work),
                                                          env.get("PYTHONPATH")]))
    start = time.perf_counter()
    subprocess.run([sys.executable, *command], env=env, cwd=work, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _events(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _table(events: list[dict], top: int) -> list[str]:
    merged: dict[str, list[float]] = {}
    for e in events:
        entry = merged.setdefault(e["kernel"], [0.0, 0.0, 0])
        entry[0] += e["total"]
        entry[1] += e["self"]
        entry[2] += 1
    rows = sorted(merged.items(), key=lambda kv: -kv[1][0])
    lines = ["| kernel | compiles | total s | self s |", "|---|---:|---:|---:|"]
    for name, (total, own, count) in rows[:top]:
        lines.append(f"| `{name}` | {count} | {total:.2f} | {own:.2f} |")
    if len(rows) > top:
        rest = sum(v[1] for _, v in rows[top:])
        lines.append(f"| {len(rows) - top} more | | | {rest:.2f} |")
    return lines


def _processes(events: list[dict]) -> list[str]:
    """Per process (the example and its compile-ahead helper, or the warmup's workers):
    its compiles, their seconds, and when the first started and the last ended, in
    seconds from the first compile of any of them."""
    top = [e for e in events if e["depth"] == 0 and "pid" in e]
    if not top:
        return []
    origin = min(e["start"] for e in top)
    lines = ["| process | compiles | compile s | first starts at s | last ends at s |",
             "|---|---:|---:|---:|---:|"]
    for pid in sorted({e["pid"] for e in top}, key=lambda p: min(e["start"] for e in top
                                                                 if e["pid"] == p)):
        mine = [e for e in top if e["pid"] == pid]
        lines.append(f"| {pid} | {len(mine)} | {sum(e['total'] for e in mine):.1f} | "
                     f"{min(e['start'] for e in mine) - origin:.1f} | "
                     f"{max(e['start'] + e['total'] for e in mine) - origin:.1f} |")
    return lines


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
    print(f"start-up benchmark in {work} (each cache starts empty)", flush=True)
    cache = os.path.join(work, "cache-example")  # the first cold run's: the warm runs'
    trace = os.path.join(work, "example.jsonl")
    colds: list[float] = []
    warm: list[float] = []
    for rep in range(max(args.reps, 1)):
        fresh = cache if rep == 0 else os.path.join(work, f"cache-cold-{rep}")
        colds.append(_run(example, fresh, trace if rep == 0 else None, work))
        warm.append(_run(example, cache, None, work))
        print(f"  example cold {colds[-1]:.1f} s, warm {warm[-1]:.2f} s", flush=True)
    cold, warm_s = statistics.median(colds), statistics.median(warm)
    warm_events = os.path.join(work, "warm.jsonl")
    _run(example, cache, warm_events, work)
    recompiled = _events(warm_events)

    lines = ["| run | seconds | / warm |", "|---|---:|---:|",
             f"| `python examples/train_digits_cnn.py`, empty cache (median of "
             f"{len(colds)}) | {cold:.1f} | {cold / warm_s:.1f}x |",
             f"| the same, warm cache (median of {len(warm)}) | {warm_s:.2f} | 1.0x |"]
    warmup_events: list[dict] = []
    if not args.skip_warmup:
        wtrace = os.path.join(work, "warmup.jsonl")
        wcache = os.path.join(work, "cache-warmup")
        wsec = _run(["-m", "tinynet.warmup"], wcache, wtrace, work)
        lines.append(f"| `python -m tinynet.warmup`, empty cache | {wsec:.1f} | |")
        again = _run(["-m", "tinynet.warmup"], wcache, None, work)
        lines.append(f"| `python -m tinynet.warmup`, warm cache | {again:.1f} | |")
        warmup_events = _events(wtrace)
    ex_events = _events(trace)
    name, secs = _slowest(ex_events + warmup_events)
    compile_s = sum(e["total"] for e in ex_events if e["depth"] == 0)
    print()
    print("\n".join(lines))
    print()
    print(f"Compile events in the example's first cold run: {len(ex_events)} compiles, "
          f"{compile_s:.1f} s in all; compiles in its warm run: {len(recompiled)}")
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
          f"{', '.join(f'{c:.1f}' for c in colds)} s; warm "
          f"{', '.join(f'{w:.2f}' for w in warm)} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
