"""Import time: ``import tinynet`` vs ``import torch``, each in a fresh interpreter.

Each is the wall time of ``python -c "import X"`` minus that of ``python -c "pass"``;
the three commands are run interleaved and the medians taken.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from harness import Context, GroupResult, Table, fmt_ms, fmt_ratio

NAME = "import"
TITLE = "Import time (fresh interpreter)"


def _wall(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def run(ctx: Context) -> GroupResult:
    import tinynet  # noqa: F401  (ImportError -> the group is skipped)

    commands = {"pass": "pass", "tinynet": "import tinynet", "torch": "import torch"}
    for code in commands.values():
        _wall(code)  # warm the file cache
    reps = 3 if ctx.settings.quick else 5
    times: dict[str, list[float]] = {k: [] for k in commands}
    names = list(commands)
    for k in range(reps):
        shift = k % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(_wall(commands[name]))
    med = {k: statistics.median(v) for k, v in times.items()}
    tn_s = max(med["tinynet"] - med["pass"], 1e-6)
    torch_s = max(med["torch"] - med["pass"], 1e-6)
    ratio = tn_s / torch_s
    table = Table(f"wall time minus the bare interpreter start (median of {reps}, interleaved)",
                  ["case", "tinynet ms", "torch ms", "ratio"])
    table.rows.append(["import", fmt_ms(tn_s), fmt_ms(torch_s), fmt_ratio(ratio)])
    ctx.progress(f"  import: ratio {ratio:.2f}")
    result = GroupResult(NAME, TITLE, [table], [("ratio", ratio)])
    result.notes.append(f"bare interpreter start: {fmt_ms(med['pass'])} ms")
    return result
