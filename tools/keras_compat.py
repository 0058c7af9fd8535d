"""Run the Keras-compat scripts (``examples/keras_compat/``) on tinynet and on Keras, and
keep their results table in ``docs/keras_compat.md``.

Each script runs unchanged on both: its import block picks Keras when ``KERAS_COMPAT=keras``
and tinynet otherwise, and its last line is ``RESULT {json}``. Run from the repository
root:

    python -m tools.keras_compat                         # run on tinynet, print the results
    python -m tools.keras_compat --write --keras-python PATH/bin/python
                                                         # run on both, rewrite the table

``--keras-python`` is an interpreter with Keras 3.15.1 (and JAX, and scikit-learn): a
scratch virtualenv, never a tinynet dependency. ``tests/test_keras_compat.py`` runs each
script on tinynet and checks its results against the table: tinynet's column exactly
(tinynet is deterministic), Keras's within :func:`close`.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "examples" / "keras_compat"
DOC = ROOT / "docs" / "keras_compat.md"
_BEGIN, _END = "<!-- results -->", "<!-- /results -->"
_ROW = re.compile(r"^\| `(?P<script>[\w]+)\.py` \| (?P<metric>[\w]+) \| (?P<keras>[^|]+) \| "
                  r"(?P<tinynet>[^|]+) \|$")


def scripts() -> list[str]:
    """The names of the scripts, sorted."""
    return sorted(p.stem for p in SCRIPTS.glob("*.py"))


def run(name: str, python: str = sys.executable, keras: bool = False,
        timeout: float = 900.0) -> dict:
    """The ``RESULT`` dict of one script's run (on Keras's JAX backend with ``keras``).

    Raises:
        RuntimeError: the script failed or printed no ``RESULT`` line.
    """
    env = dict(os.environ)
    env.pop("KERAS_COMPAT", None)
    if keras:
        env.update(KERAS_COMPAT="keras", KERAS_BACKEND="jax")
    else:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([python, str(SCRIPTS / f"{name}.py")], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{name} ({'keras' if keras else 'tinynet'}) failed:\n"
                           f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def close(metric: str, tinynet: float, keras: float) -> bool:
    """Whether two frameworks' results of one metric are close: counts (``*_calls``,
    ``*_count``) and flags (``*_is_*``) equal, accuracies within 0.06, epoch counts within 3, other figures within 20 %
    (different initial weights and random streams give somewhat different runs)."""
    if metric.endswith(("_calls", "_count")) or "_is_" in metric:
        return tinynet == keras
    if metric.endswith("accuracy"):
        return abs(tinynet - keras) <= 0.06
    if metric.endswith("epochs"):
        return abs(tinynet - keras) <= 3
    return abs(tinynet - keras) <= 0.2 * max(abs(keras), 1e-12)


def table() -> dict[tuple[str, str], tuple[float, float]]:
    """``{(script, metric): (keras, tinynet)}`` as the doc's results table holds them."""
    text = DOC.read_text(encoding="utf-8")
    body = text[text.index(_BEGIN):text.index(_END)]
    rows = {}
    for line in body.splitlines():
        m = _ROW.match(line.strip())
        if m:
            rows[(m["script"], m["metric"])] = (_number(m["keras"]), _number(m["tinynet"]))
    return rows


def _number(text: str) -> float | int:
    """A table entry as written: an int stays an int (so ``--only`` rewrites the other
    scripts' rows unchanged)."""
    text = text.strip()
    return int(text) if re.fullmatch(r"-?\d+", text) else float(text)


def _render(results: dict[str, tuple[dict, dict]]) -> str:
    lines = [_BEGIN, "| script | result | Keras 3.15.1 (JAX) | tinynet |", "|---|---|---|---|"]
    for name in sorted(results):
        keras, tinynet = results[name]
        for metric in tinynet:
            lines.append(f"| `{name}.py` | {metric} | {keras[metric]} | {tinynet[metric]} |")
    lines.append(_END)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keras-python", help="an interpreter with Keras 3.15.1 and JAX")
    parser.add_argument("--write", action="store_true", help="rewrite docs/keras_compat.md")
    parser.add_argument("--only", nargs="*", help="these scripts only")
    args = parser.parse_args(argv)
    old = table() if DOC.exists() else {}
    results = {}
    for name in args.only or scripts():
        tinynet = run(name)
        if args.keras_python:
            keras = run(name, args.keras_python, keras=True)
        else:
            keras = {metric: old[(name, metric)][0] for metric in tinynet}
        results[name] = (keras, tinynet)
        print(name, "keras", keras, "tinynet", tinynet, flush=True)
    if args.write:
        if args.only:
            for (name, metric), (keras, tinynet) in old.items():
                results.setdefault(name, ({}, {}))
                results[name][0].setdefault(metric, keras)
                results[name][1].setdefault(metric, tinynet)
        text = DOC.read_text(encoding="utf-8")
        start, end = text.index(_BEGIN), text.index(_END) + len(_END)
        DOC.write_text(text[:start] + _render(results) + text[end:], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
