"""Regenerate the example outputs quoted in README.md and docs/*.md.

Run from the repository root:

    python -m tools.docs_outputs            # rerun the examples, rewrite the marked regions
    python -m tools.docs_outputs --check    # rerun them, print a diff, exit 1 if the docs differ
    python -m tools.docs_outputs --only residual_cnn normalization_tour
    python -m tools.docs_outputs --times    # also remeasure the run times, on this machine

A quoted output lives between two HTML comments, invisible on the rendered page:

    <!-- generated: train_digits_cnn.output -->
    ```text
    ...
    ```
    <!-- /generated -->

or inline, inside a sentence: ``(<!-- generated: residual_cnn.accuracy -->0.9867<!-- /generated -->)``.
A name is ``<example>.<field>``: the example (a script in ``examples/``) runs once, in a
subprocess, in a temporary working folder (its files go to ``--out DIR`` there), and
:data:`JOBS` turns its stdout into the fields. ``machine`` names the machine of the run.

Every figure is deterministic (the same bits at any thread count and on any x86-64 CPU,
docs/determinism.md) except the machine's own: run times, fit's step times, and ONNX
Runtime's arithmetic and times. Those are never compared (:data:`MASKS`,
:func:`compared`), and a region whose compared text is unchanged keeps its old text, so
regenerating on another machine changes nothing. ``--times`` remeasures the run times:
each example runs first with an empty Numba cache (``<example>.first_time``, compiling
the kernels it uses), then again with those kernels cached (``<example>.time``), and
``machine`` names the machine; only ``--times`` rewrites these regions, and it rewrites
every region, so the step times quoted come from the named machine too. ``--check`` is
what ``tests/docs/test_doc_outputs.py`` runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
from typing import Callable

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
REGION = re.compile(r"<!-- generated: (?P<name>[\w.]+) -->(?P<body>.*?)<!-- /generated -->",
                    re.S)
#: Machine-dependent parts of a figure, replaced on both sides before comparing.
MASKS = [
    (re.compile(r"(Epoch \d+/\d+ - \d+/\d+) - \d+s - \d+ms/step"), r"\1 - <time>"),
    (re.compile(r"\(\d+ runs in \d+s\)"), "(<runs and time>)"),
    (re.compile(r"largest logit difference \S+ \(\S+ of the largest logit\)"),
     "largest logit difference <ONNX Runtime's arithmetic>"),
    (re.compile(r"\): tinynet \S+ ms, ONNX Runtime \S+ ms; tinynet / ONNX Runtime = \S+"),
     "): <times>"),
]
#: Seconds one example may take (a first run compiles its kernels).
TIMEOUT = 1800


@dataclasses.dataclass
class Job:
    """One example run and the fields its stdout gives."""
    args: list[str]
    fields: Callable[[str], dict[str, str]]

    def command(self, name: str) -> list[str]:
        return [sys.executable, str(ROOT / "examples" / f"{name}.py"), *self.args]


def _lines(out: str) -> list[str]:
    return [line.rstrip() for line in out.splitlines()]


def _find(lines: list[str], prefix: str) -> int:
    for i, line in enumerate(lines):
        if line.startswith(prefix):
            return i
    raise ValueError(f"no line starting with {prefix!r} in the example's output")


def _value(lines: list[str], pattern: str) -> str:
    for line in lines:
        match = re.search(pattern, line)
        if match:
            return match.group(1)
    raise ValueError(f"no line matching {pattern!r} in the example's output")


def _text_block(lines: list[str]) -> str:
    return "\n".join(["```text", *lines, "```"])


def _train_digits_cnn(out: str) -> dict[str, str]:
    lines = _lines(out)
    epochs = [line for line in lines if line.startswith("Epoch ")]
    totals = _find(lines, " Total params:")
    test = _find(lines, "test accuracy:")
    excerpt = [*lines[totals:totals + 3], *epochs[:2], "...", epochs[-1], "",
               *lines[test:test + 4], "...", *(line for line in lines if line.startswith("saved "))]
    return {"output": _text_block(excerpt),
            "accuracy": _value(lines, r"^test accuracy: (\S+)$")}


def _residual_cnn(out: str) -> dict[str, str]:
    return {"accuracy": _value(_lines(out), r"^test accuracy: (\S+)$")}


def _augmented_cnn(out: str) -> dict[str, str]:
    return {"accuracy": _value(_lines(out), r"test accuracy: (\S+)$")}


def _sequence_conv1d(out: str) -> dict[str, str]:
    lines = _lines(out)
    test = _find(lines, "test accuracy:")
    return {"accuracy": _value(lines, r"^test accuracy: (\S+)$"),
            "output": _text_block(lines[test:test + 5])}


def _sequence_lstm(out: str) -> dict[str, str]:
    lines = _lines(out)
    test = _find(lines, "test accuracy:")
    return {"accuracy": _value(lines, r"^test accuracy: (\S+)$"),
            "output": _text_block(lines[test:test + 11])}


def _normalization_tour(out: str) -> dict[str, str]:
    lines = _lines(out)
    gn = _find(lines, "GroupNormalization:")
    digests = [line for line in lines if line.startswith("threads=")]
    verdict = _find(lines, "outputs and gradients bitwise identical")
    return {"output": _text_block([*lines[gn:gn + 3], "...", *digests, lines[verdict]]),
            "digest": digests[0].rsplit(" ", 1)[1]}


def _normalization_zoo(out: str) -> dict[str, str]:
    lines = _lines(out)
    end = _find(lines, "What it shows.")
    while not lines[end - 1]:
        end -= 1
    table = {}
    header = _find(lines, "test accuracy")
    sizes = [int(b) for b in re.findall(r"batch (\d+)", lines[header])]
    steps = [int(s) for s in re.findall(r"\((\d+)\)", lines[header + 1])]
    for line in lines[header + 2:]:
        cells = line.split()
        if len(cells) != len(sizes) + 2:
            break
        table[cells[0]] = [float(c) for c in cells[1:]]
    bn = table["BN"][:len(sizes)]
    worst = bn.index(min(bn))
    changes = {line.split()[0]: line.split()[1] for line in lines
               if re.match(r"^  \S+ +\S+", line) and not line.startswith("   ")}
    return {
        "output": _text_block(lines[:end]),
        "bn_worst": f"{bn[worst]:.4f}",
        "bn_worst_batch": str(sizes[worst]),
        "bn_worst_steps": str(steps[worst]),
        "bn_fast_at_worst": f"{table['BN(m=0.9)'][worst]:.4f}",
        "bn_smallest_batch": f"{bn[0]:.4f}",
        "bn_change": changes["BN"],
        "others_spread": f"{max(table[k][-1] for k in ('GN(4)', 'IN', 'LN(1,2,3)')):.4f}",
    }


def _custom_layer(out: str) -> dict[str, str]:
    lines = _lines(out)
    epochs = [i for i, line in enumerate(lines) if line.startswith("Epoch ")]
    excerpt = [*lines[:epochs[0] + 1], "...", *lines[epochs[-1]:]]
    return {"output": _text_block(excerpt),
            "accuracy": _value(lines, r"^test: .*\baccuracy (\S+),")}


def _custom_kernel_layer(out: str) -> dict[str, str]:
    lines = _lines(out)
    training = _find(lines, "2. training")
    row = next(line for line in lines if "(ChannelPReLU)" in line)
    last_epoch = [line for line in lines if line.startswith("Epoch ")][-1]
    test = _find(lines, "test accuracy")
    saved = _find(lines, "3. save")
    mismatch = next(line for line in lines if "gradient mismatch" in line).strip()
    return {"output": _text_block([*lines[:training + 1], "...", row, "...", last_epoch,
                                   lines[test], "", *lines[saved:]]),
            "mismatch": _text_block([mismatch]),
            "ratio": _value(lines, r"worst error ratio (\S+)")}


def _export_onnx(out: str) -> dict[str, str]:
    return {"output": _text_block(_lines(out))}


#: The examples, each with its command-line arguments (``--out DIR``: a folder in the
#: run's temporary working folder) and the fields of its output.
JOBS: dict[str, Job] = {
    "train_digits_cnn": Job(["--verbose", "2", "--out", "DIR"], _train_digits_cnn),
    "residual_cnn": Job(["--verbose", "2", "--out", "DIR"], _residual_cnn),
    "normalization_zoo": Job([], _normalization_zoo),
    "normalization_tour": Job([], _normalization_tour),
    "custom_layer": Job(["--out", "DIR"], _custom_layer),
    "custom_kernel_layer": Job(["--out", "DIR"], _custom_kernel_layer),
    "augmented_cnn": Job(["--verbose", "2", "--out", "DIR"], _augmented_cnn),
    "sequence_conv1d": Job(["--verbose", "2"], _sequence_conv1d),
    "sequence_lstm": Job(["--verbose", "2"], _sequence_lstm),
    "export_onnx": Job(["--out", "DIR"], _export_onnx),
}
#: Fields every job gets from its run rather than from its output.
TIME_FIELDS = ("time", "first_time")


def describe_machine(load: bool = False) -> str:
    """e.g. ``a 2-core Intel Xeon Processor VM (AVX-512)``, from /proc/cpuinfo; with
    ``load``, the 1-minute load average too (other processes slow the runs down)."""
    model, flags = "x86-64", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "x86-64":
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    model = re.sub(r"\((R|TM|tm)\)|\bCPU\b|@.*$|\d+-Core Processor", " ", model)
    model = " ".join(model.split())
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    kind = " VM" if "hypervisor" in flags else ""
    busy = ""
    if load and hasattr(os, "getloadavg"):
        busy = f", a load average of {os.getloadavg()[0]:.1f} when the runs began"
    return f"a {os.cpu_count()}-core {model}{kind} ({isa}{busy})"


def compared(name: str, text: str) -> str | None:
    """What of a region is compared: its text with the machine's figures masked, or None
    for a region that is the machine's alone (a time, the machine's name)."""
    if name == "machine" or name.rsplit(".", 1)[-1] in TIME_FIELDS:
        return None
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text


def _run(name: str, work: str, env: dict[str, str]) -> tuple[str, float]:
    job = JOBS[name]
    started = time.perf_counter()
    proc = subprocess.run(job.command(name), cwd=work, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"examples/{name}.py {' '.join(job.args)} failed "
                           f"(exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout, seconds


def run_job(name: str, times: bool = False) -> dict[str, str]:
    """Runs one example and returns its fields, keyed ``<name>.<field>``; with ``times``,
    runs it on an empty Numba cache first and adds the two run times."""
    job = JOBS[name]
    with tempfile.TemporaryDirectory(prefix=f"tinynet-docs-{name}-") as work:
        env = {**os.environ, "MPLBACKEND": "Agg"}
        if times:
            env["NUMBA_CACHE_DIR"] = os.path.join(work, "numba-cache")
            first, first_seconds = _run(name, work, env)
        out, seconds = _run(name, work, env)
    fields = {f"{name}.{key}": value for key, value in job.fields(out).items()}
    if times:
        for key, value in job.fields(first).items():
            if compared(key, value) != compared(key, fields[f"{name}.{key}"]):
                raise RuntimeError(f"examples/{name}.py: {key} differs between a first run "
                                   f"and a run with the kernels cached:\n{value}\n"
                                   f"{fields[f'{name}.{key}']}")
        fields[f"{name}.first_time"] = f"{first_seconds:.0f} s"
        fields[f"{name}.time"] = f"{seconds:.0f} s"
    return fields


def regions(text: str) -> list[re.Match]:
    return list(REGION.finditer(text))


def region_names(pages: list[pathlib.Path] = PAGES) -> dict[str, list[pathlib.Path]]:
    names: dict[str, list[pathlib.Path]] = {}
    for page in pages:
        for match in regions(page.read_text()):
            names.setdefault(match.group("name"), []).append(page)
    return names


def job_of(name: str) -> str | None:
    """The job a region name belongs to (None for ``machine``); raises for an unknown one."""
    if name == "machine":
        return None
    job, _, field = name.partition(".")
    if job not in JOBS or not field:
        raise ValueError(f"unknown generated region {name!r}: expected 'machine' or "
                         f"'<example>.<field>' with an example of {sorted(JOBS)}")
    return job


def _body(match: re.Match, text: str, fresh: str) -> str:
    """The new body of a region: inline as is; a block region (its marker alone on its
    line) on lines of its own, indented like the marker."""
    if not match.group("body").startswith("\n"):
        return fresh
    line_start = text.rfind("\n", 0, match.start()) + 1
    indent = text[line_start:match.start()]
    lines = [indent + line if line else line for line in fresh.split("\n")]
    return "\n" + "\n".join(lines) + "\n" + indent


def _unindent(match: re.Match, text: str) -> str:
    body = match.group("body")
    if not body.startswith("\n"):
        return body
    line_start = text.rfind("\n", 0, match.start()) + 1
    indent = text[line_start:match.start()]
    lines = body[1:].rstrip(" ").removesuffix("\n").split("\n")
    return "\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines)


def rewrite(text: str, fresh: dict[str, str], keep_equal: bool = False) -> str:
    """``text`` with every region whose name is in ``fresh`` holding the fresh text; with
    ``keep_equal``, a region whose compared text is the same keeps its old text."""
    def replace(match: re.Match) -> str:
        name = match.group("name")
        if name not in fresh:
            return match.group(0)
        if keep_equal and compared(name, _unindent(match, text)) == compared(name, fresh[name]):
            return match.group(0)
        return f"<!-- generated: {name} -->{_body(match, text, fresh[name])}<!-- /generated -->"

    return REGION.sub(replace, text)


def current(text: str) -> dict[str, list[str]]:
    """Each region's current text (unindented), by name."""
    out: dict[str, list[str]] = {}
    for match in regions(text):
        out.setdefault(match.group("name"), []).append(_unindent(match, text))
    return out


def mismatches(fresh: dict[str, str], pages: list[pathlib.Path] = PAGES) -> list[str]:
    """Unified diffs of every page whose compared regions differ from ``fresh``."""
    diffs = []
    for page in pages:
        text = page.read_text()
        bad = [name for name, texts in current(text).items() if name in fresh
               for old in texts if compared(name, old) != compared(name, fresh[name])]
        if bad:
            new = rewrite(text, fresh, keep_equal=True)
            rel = str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)
            diffs.append(f"{rel}: {', '.join(sorted(set(bad)))}\n" + "".join(
                difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                     f"a/{rel}", f"b/{rel} (fresh run)")))
    return diffs


def generate(names: list[str], times: bool = False, log=print) -> dict[str, str]:
    """Runs the named examples; returns every field (and with ``times``, ``machine``)."""
    fresh = {"machine": describe_machine(load=True)} if times else {}
    for name in names:
        started = time.perf_counter()
        fresh.update(run_job(name, times))
        log(f"docs_outputs: examples/{name}.py {' '.join(JOBS[name].args)} "
            f"({time.perf_counter() - started:.0f} s)")
    return fresh


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs_outputs",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare the docs with a fresh run; print a diff and exit 1 "
                        "if they differ (times and the machine are not compared)")
    parser.add_argument("--only", nargs="+", metavar="EXAMPLE", choices=sorted(JOBS),
                        help="run only these examples (default: every example the docs quote)")
    parser.add_argument("--times", action="store_true",
                        help="remeasure the run times (each example on an empty Numba cache, "
                        "then again) and rewrite every region")
    parser.add_argument("--json", metavar="FILE", help="also write the fresh fields to FILE")
    args = parser.parse_args(argv)

    used = region_names()
    for name in used:
        job_of(name)
    wanted = args.only or [job for job in JOBS if any(job_of(n) == job for n in used)]
    fresh = generate(wanted, times=args.times, log=lambda s: print(s, file=sys.stderr))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(fresh, indent=1, sort_keys=True))

    if args.check:
        diffs = mismatches(fresh)
        for diff in diffs:
            print(diff)
        print(f"docs_outputs: {len(diffs)} page(s) disagree with a fresh run" if diffs
              else "docs_outputs: the docs agree with a fresh run")
        return 1 if diffs else 0
    for page in PAGES:
        text = page.read_text()
        new = rewrite(text, fresh, keep_equal=not args.times)
        if new != text:
            page.write_text(new)
            print(f"docs_outputs: rewrote {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
