"""tinynet vs PyTorch CPU, side by side in one process, both at 2 threads.

Usage:
    python benchmarks/run.py [--quick] [--groups norm,conv,...] [--write-docs]
                             [--peer-path PATHS]

Every case is timed interleaved (tinynet, PyTorch, tinynet, PyTorch, ...) after a
warm-up (Numba compilation is never timed), and reported as medians. The headline is
the ratio tinynet time / PyTorch time (below 1: tinynet is faster), with a geometric
mean per group. For 4-D cases PyTorch runs in both NCHW and channels-last memory
formats and the faster one is compared (the table says which won). ``--write-docs``
writes the tables to docs/performance.md. ``--peer-path`` names the folders holding
Keras and JAX (never tinynet dependencies) for the ``rnn`` group's Keras-on-JAX column,
which runs them in fresh processes as ``benchmarks/peer.py`` does ("not installed"
without them).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# PyTorch first: its OpenMP runtime reads OMP_* / GOMP_* at load, before tinynet sets its own.
import torch  # noqa: E402, F401

import harness  # noqa: E402

GROUPS = {
    "norm": "cases_norm",
    "conv": "cases_conv",
    "newconv": "cases_newconv",
    "pool": "cases_pool",
    "dense": "cases_dense",
    "optimizer": "cases_optimizer",
    "train": "cases_train",
    "import": "cases_import",
    "ops": "cases_ops",
    "rnn": "cases_rnn",
    "transformer": "cases_transformer",
}
DOCS_PATH = os.path.join(os.path.dirname(HERE), "docs", "performance.md")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time tinynet against PyTorch CPU (ratios; medians of interleaved runs).")
    parser.add_argument("--quick", action="store_true", help="few repetitions (smoke run)")
    parser.add_argument("--groups", default=",".join(GROUPS),
                        help=f"comma-separated subset of: {', '.join(GROUPS)} (default: all)")
    parser.add_argument("--peer-path", default="",
                        help="folders holding keras and jax (os.pathsep separated)")
    parser.add_argument("--keep-freed-memory", action="store_true",
                        help="make glibc keep freed memory (no fresh pages for PyTorch's "
                             "outputs; see harness.keep_freed_memory)")
    parser.add_argument("--write-docs", action="store_true",
                        help=f"write the results to {os.path.relpath(DOCS_PATH)}")
    args = parser.parse_args(argv)
    groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    unknown = [g for g in groups if g not in GROUPS]
    if unknown or not groups:
        parser.error(f"--groups: unknown group(s) {unknown or groups!r}; "
                     f"expected a comma-separated subset of {', '.join(GROUPS)}")
    args.groups = groups
    return args


# -- rendering ---------------------------------------------------------------------------


def render_text(table: harness.Table) -> str:
    rows = [table.headers] + table.rows
    ncol = len(table.headers)
    widths = [max(len(r[i]) if i < len(r) else 0 for r in rows) for i in range(ncol)]
    lines = [table.title]
    for i, row in enumerate(rows):
        cells = [(row[j] if j < len(row) else "") for j in range(ncol)]
        lines.append("  ".join(c.ljust(widths[j]) if j == 0 else c.rjust(widths[j])
                               for j, c in enumerate(cells)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_markdown(table: harness.Table) -> str:
    ncol = len(table.headers)
    lines = [f"*{table.title}*", "",
             "| " + " | ".join(table.headers) + " |",
             "|" + "|".join(["---"] + ["---:"] * (ncol - 1)) + "|"]
    for row in table.rows:
        cells = [(row[j] if j < len(row) else "") for j in range(ncol)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def _geomean_text(label: str, value: float) -> str:
    return f"{label}: {'n/a' if not math.isfinite(value) else f'{value:.2f}'}"


def print_group(result: harness.GroupResult) -> None:
    print()
    print(f"== {result.name}: {result.title}")
    if result.skipped:
        print(f"skipped: {result.skipped}")
        return
    for table in result.tables:
        print()
        print(render_text(table))
    if result.geomeans:
        print()
        for label, value in result.geomeans:
            print(_geomean_text(label, value))
    for note in result.notes:
        print(f"note: {note}")


#: docs/performance.md from this heading on is written by hand: ``--write-docs`` keeps it.
HAND_SECTIONS = "\n## Start-up\n"


def write_docs(path: str, results: list[harness.GroupResult], machine: dict[str, str],
               bandwidth: float, torch_bandwidth: float, command: str, quick: bool,
               elapsed_s: float, other: float | None) -> None:
    today = datetime.date.today().isoformat()
    st = harness.Settings.make(quick)
    out = [
        "# Performance",
        "",
        "tinynet against PyTorch CPU, measured side by side in one process, both at "
        f"{harness.THREADS} threads. The headline number is the **ratio tinynet time / "
        "PyTorch time** (below 1: tinynet is faster), with a geometric mean per group. "
        "Absolute times depend on the machine and on what else runs on it; read them only "
        "next to the PyTorch time measured in the same run.",
        "",
        f"Measured on {today} with `{command}`"
        + (" (quick mode: few repetitions, rough numbers)." if quick else ".")
        + f" The whole run took {elapsed_s / 60:.1f} min.",
        "",
    ]
    marked = sum(1 for r in results for t in r.tables for row in t.rows
                 if row and row[-1].endswith("*"))
    if marked:
        out += [f"**{marked} case(s), marked '*', were measured while other processes kept "
                "the cores busy**, so their timings are inflated; rerun on an idle machine "
                "before drawing conclusions from them.", ""]
    elif other is not None and other > harness.RETRY_OTHER:
        out += [f"Other processes kept {100 * other:.0f}% of the cores busy during this run; "
                "the cases they disturbed were measured again, and every result kept was "
                "measured while the cores were otherwise idle.", ""]
    out += [
        "| group | geometric mean of the ratios |",
        "|---|---:|",
    ]
    for result in results:
        if result.skipped:
            out.append(f"| {result.name} | skipped: {result.skipped} |")
        elif result.geomeans:
            label, value = result.geomeans[0]
            out.append(f"| {result.name} ({label}) | "
                       f"{'n/a' if not math.isfinite(value) else f'{value:.2f}'} |")
    out += [
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
    ]
    for key, value in machine.items():
        out.append(f"| {key} | {value} |")
    out += [
        f"| load average at end | {harness.load_average()} |",
        f"| copy bandwidth (np.copyto, 256 MiB, 1 thread, read + write) | {bandwidth:.1f} GB/s |",
        f"| copy bandwidth (torch copy_, 256 MiB, {harness.THREADS} threads, read + write) "
        f"| {torch_bandwidth:.1f} GB/s |",
        "",
        "## Method",
        "",
        "- Every callable is warmed up before timing; the first tinynet call compiles (or "
        "loads from cache) its Numba kernels, and that time is never part of a timed repetition.",
        "- The callables of a case are interleaved: each repetition runs tinynet and every "
        "PyTorch variant once, rotating which goes first. Small cases call the operation "
        "several times per repetition so each repetition lasts at least 2 ms.",
        "- Times are medians over the repetitions (at least "
        f"{st.min_reps}, or enough to fill about {st.budget_s:.2f} s per side). 'noise' is "
        "the larger interquartile range of the two sides, relative to the median.",
        "- The machine may be shared. A measurement noisier than "
        f"{100 * harness.RETRY_IQR:.0f}%, or during which other processes kept more than "
        f"{100 * harness.RETRY_OTHER:.0f}% of the cores busy, is repeated "
        f"{st.retries} time(s) after waiting up to {st.case_wait_s:.0f} s for idle cores"
        + (f"; cases still disturbed are measured once more at the end of their group "
           f"(within {st.redo_s:.0f} s)" if st.redo_s > 0 else "")
        + ". The least disturbed result is kept; a '*' after the noise marks a case that "
        "other processes still disturbed.",
        "- PyTorch is imported before tinynet and loads its own libgomp, which reads the "
        "environment then: libgomp's default wait policy unless the machine table says "
        "otherwise. Numba's OpenMP layer (pip's wheels) links libgomp by its usual name, so "
        "its calls go to the runtime already loaded, PyTorch's: both sides run on one pool "
        "with libgomp's default spin (a worker spins ~10 ms after each parallel region, "
        "measured), not tinynet's bounded spin (`GOMP_SPINCOUNT=10000`, docs/tuning.md), "
        "which a tinynet-only process gets.",
        "- Interleaving means neither side finds its data still in cache from its own "
        "previous call, as in a real training step; timing one side alone in a loop would "
        "flatter in-cache shapes.",
        "- For 4-D inputs PyTorch runs both NCHW and channels-last "
        "(`torch.channels_last`) and the faster one is compared; the table names the winner. "
        "tinynet is always channels-last.",
        "- The bandwidth floor of a normalization case is the time to move its bytes at the "
        "np.copyto bandwidth: forward reads x and writes y, backward reads x and dy and "
        "writes dx. The norm group measures that bandwidth again during each case, "
        "interleaved with its timings (its notes say how), because on a shared machine the "
        "bandwidth moves during a run; its floors table also gives each case against the "
        "bandwidth above (the run's start).",
    ]
    for result in results:
        out += ["", f"## {result.name}: {result.title}", ""]
        if result.skipped:
            out.append(f"Skipped: {result.skipped}")
            continue
        for table in result.tables:
            out += [render_markdown(table), ""]
        if result.geomeans:
            out += [f"- {_geomean_text(label, value)}" for label, value in result.geomeans]
            out.append("")
        out += [f"Note: {note}" for note in result.notes]
    out += [
        "",
        "## How to reproduce",
        "",
        "```",
        "python benchmarks/run.py --write-docs            # every group, 4 to 15 minutes",
        "python benchmarks/run.py --quick --groups norm    # a quick look at one group",
        "```",
        "",
        "Run it on an otherwise idle machine for numbers worth comparing across runs; the "
        "ratios are what to compare. `--keep-freed-memory` makes glibc keep freed memory, "
        "so PyTorch's fresh outputs take no page faults whatever the earlier cases left "
        "behind (the machine table says which allocator settings a run had).",
        "",
    ]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = "\n".join(out)
    try:  # the hand-written sections, from HAND_SECTIONS on, are kept as they are
        with open(path, encoding="utf-8") as fh:
            old = fh.read()
    except FileNotFoundError:
        old = ""
    at = old.find(HAND_SECTIONS)
    if at >= 0:
        text = text.rstrip("\n") + "\n\n" + old[at:]
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


# -- main --------------------------------------------------------------------------------


def run_group(name: str, ctx: harness.Context) -> harness.GroupResult:
    module = importlib.import_module(GROUPS[name])
    print(f"\n-- {name}: {module.TITLE}", flush=True)
    try:
        return module.run(ctx)
    except (ImportError, harness.Skip) as exc:
        return harness.GroupResult(name, module.TITLE, skipped=harness.describe_error(exc))


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    start = time.perf_counter()
    other_work = harness.OtherWork()
    harness.configure_threads()
    settings = harness.Settings.make(args.quick)
    reps = 3 if args.quick else 7
    bandwidth = harness.copy_bandwidth(reps=reps)
    held, speedups = harness.held_cache_bytes(reps=reps)
    harness.release_copy_buffers()
    torch_bandwidth = harness.torch_copy_bandwidth(reps=reps)
    machine = harness.machine_info()
    machine["load average at start"] = harness.load_average()
    machine["memory allocator"] = (harness.keep_freed_memory() if args.keep_freed_memory
                                   else "glibc's defaults")
    busy = harness.busy_fraction()
    machine["cores busy with other work at start"] = "n/a" if busy is None else f"{100 * busy:.0f}%"
    machine["cache held between passes (measured)"] = (
        f"{held >> 20} MiB (re-read / first read after a flush, {harness.THREADS} threads: "
        + ", ".join(f"{mib} MiB {x:.2f}x" for mib, x in speedups.items()) + ")")
    print("tinynet vs PyTorch CPU (ratio = tinynet time / PyTorch time; < 1: tinynet faster)")
    for key, value in machine.items():
        print(f"  {key}: {value}")
    if busy is not None and busy > harness.RETRY_OTHER:
        print(f"  warning: other processes keep {100 * busy:.0f}% of the cores busy; "
              "expect noisy numbers")
    print(f"  copy bandwidth: {bandwidth:.1f} GB/s (np.copyto, 1 thread), "
          f"{torch_bandwidth:.1f} GB/s (torch copy_, {harness.THREADS} threads)")
    ctx = harness.Context(settings, bandwidth, held,
                          progress=lambda text: print(text, flush=True),
                          peer_path=args.peer_path)
    results = []
    for name in args.groups:
        result = run_group(name, ctx)
        results.append(result)
        print_group(result)
    elapsed = time.perf_counter() - start
    other = other_work.fraction()
    other_text = "n/a" if other is None else f"{100 * other:.0f}%"
    print()
    print(f"other processes kept {other_text} of the cores busy during the run "
          f"(waited {harness.waited_s():.0f} s for idle cores)")
    print("summary (geometric mean of tinynet / PyTorch time ratios):")
    for result in results:
        if result.skipped:
            print(f"  {result.name}: skipped: {result.skipped}")
        elif result.geomeans:
            label, value = result.geomeans[0]
            print(f"  {result.name}: {_geomean_text(label, value)}")
    print(f"total time {elapsed:.0f} s")
    if args.write_docs:
        machine["numba"] = harness.machine_info()["numba"]  # threading layer known by now
        machine["cores busy with other work during the run"] = other_text
        command = "python benchmarks/run.py" + (" --quick" if args.quick else "") + (
            " --keep-freed-memory" if args.keep_freed_memory else "") + (
            f" --groups {','.join(args.groups)}" if args.groups != list(GROUPS) else "")
        write_docs(DOCS_PATH, results, machine, bandwidth, torch_bandwidth, command,
                   args.quick, elapsed, other)
        print(f"wrote {os.path.relpath(DOCS_PATH)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
