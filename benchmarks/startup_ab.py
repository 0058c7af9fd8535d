"""Cold runs of the README example for two tinynet trees, in turns: the compile timeline.

Run: python benchmarks/startup_ab.py OTHER_TREE [--reps 3]

Each run is ``python examples/train_digits_cnn.py`` on a new empty ``NUMBA_CACHE_DIR``
with ``PYTHONPATH`` at one tree (this one, whose benchmarks folder holds this script, and
``OTHER_TREE``, e.g. a checkout of main), the two trees alternating (AB, BA, AB, ...) so a
drift of the machine's load reaches both alike; each run's helpers are waited for before
the next. From each run's compile events (recorded as :mod:`startup` records them) it
prints, per run and as medians per tree: the example's own compile CPU seconds, its
helpers' compile CPU seconds before the example's first compile (the early helper
``import tinynet`` starts on a cold cache) and in the fit's window (up to the end of the
example's last compile), when the example's first compile started and its last ended
(seconds after the launch), the wall seconds and the load average. On a busy machine the
CPU columns are the figures to compare; the wall seconds need an idle one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import startup

HERE = startup.ROOT
COLUMNS = ("wall", "first", "end", "own", "early", "window", "load")


def _row(name: str, trace: str, launched: float, run: startup.Run, load: float) -> dict:
    top = [e for e in startup._events(trace) if e["depth"] == 0]
    pids = {e["pid"] for e in top}
    helpers = {e["pid"] for e in top if e.get("ppid") in pids}
    own = [e for e in top if e["pid"] not in helpers]
    first = min(e["start"] for e in own)
    end = max(e["start"] + e["total"] for e in own)
    theirs = [e for e in top if e["pid"] in helpers]
    return {"tree": name, "wall": run.wall, "first": first - launched, "end": end - launched,
            "own": sum(e["cpu"] for e in own),
            "early": sum(e["cpu"] for e in theirs if e["start"] < first),
            "window": sum(e["cpu"] for e in theirs if first <= e["start"] < end),
            "load": load}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", help="the other tinynet tree (its root folder)")
    parser.add_argument("--reps", type=int, default=3, help="cold runs of each tree")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    trees = {"this": HERE, "other": os.path.abspath(args.other)}
    work = tempfile.mkdtemp(prefix="tinynet-startup-ab-")
    startup._adopt_orphans()
    example = [startup.EXAMPLE, "--epochs", "15", "--out", os.path.join(work, "out"),
               "--verbose", "0"]
    rows = []
    for rep in range(max(args.reps, 1)):
        for name in (("other", "this") if rep % 2 == 0 else ("this", "other")):
            cache = os.path.join(work, f"cache-{name}-{rep}")
            trace = os.path.join(work, f"events-{name}-{rep}.jsonl")
            load = os.getloadavg()[0]
            os.environ["PYTHONPATH"] = trees[name]
            launched = time.time()
            run = startup._run(example, cache, trace, work)
            rows.append(_row(name, trace, launched, run, load))
            print(json.dumps({k: (round(v, 2) if isinstance(v, float) else v)
                              for k, v in rows[-1].items()}), flush=True)
    print(f"\ncold runs in {work}: medians (s; own / early / window: compile CPU s)")
    print("| tree | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---:|" * len(COLUMNS))
    for name in trees:
        mine = [r for r in rows if r["tree"] == name]
        print(f"| {name} ({trees[name]}) | "
              + " | ".join(f"{statistics.median(r[c] for r in mine):.2f}" for c in COLUMNS)
              + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
