"""The example outputs quoted in the docs agree with a fresh run of the examples.

``python -m tools.docs_outputs --check`` reruns the examples and compares every
``<!-- generated: NAME -->`` region of README.md and docs/*.md with their output (times,
the machine's name and ONNX Runtime's arithmetic aside). Here it runs once per group of
examples, in a subprocess from the repository root: every example but the zoo in one
module-scoped run (about 30 s with the kernels cached), the zoo (15 trainings, about
20 s) in a test of its own. Regenerate the docs with ``python -m tools.docs_outputs``.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from tools import docs_outputs as gen

ROOT = pathlib.Path(__file__).resolve().parents[2]
SLOW = ["normalization_zoo"]
CHEAP = [job for job in gen.JOBS if job not in SLOW]
USED = gen.region_names()
COMPARED = sorted(name for name in USED if name != "machine"
                  and name.rsplit(".", 1)[1] not in gen.TIME_FIELDS)


def _check(jobs: list[str], folder: pathlib.Path) -> tuple[subprocess.CompletedProcess, dict]:
    path = folder / "fresh.json"
    proc = subprocess.run([sys.executable, "-m", "tools.docs_outputs", "--check", "--json",
                           str(path), "--only", *jobs], cwd=ROOT, capture_output=True,
                          text=True, timeout=3600)
    assert proc.returncode in (0, 1) and path.is_file(), proc.stderr[-4000:]
    return proc, json.loads(path.read_text())


@pytest.fixture(scope="module")
def cheap_run(tmp_path_factory):
    return _check(CHEAP, tmp_path_factory.mktemp("docs_outputs"))


def test_every_region_names_an_example():
    assert USED, "no generated regions found in the docs"
    for name in USED:
        gen.job_of(name)  # raises for an unknown name
    quoted = {gen.job_of(name) for name in USED} - {None}
    assert quoted == set(gen.JOBS), f"examples no doc quotes: {set(gen.JOBS) - quoted}"


def test_the_cheap_examples_agree_with_the_docs(cheap_run):
    proc, _ = cheap_run
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize("name", [n for n in COMPARED if gen.job_of(n) in CHEAP])
def test_region(name, cheap_run):
    _, fresh = cheap_run
    for page in USED[name]:
        for old in gen.current(page.read_text())[name]:
            assert gen.compared(name, old) == gen.compared(name, fresh[name]), (
                f"{page.relative_to(ROOT)}: region {name} is stale; a fresh run gives\n"
                f"{fresh[name]}\n(python -m tools.docs_outputs rewrites it)")


@pytest.mark.slow
def test_the_normalization_zoo_agrees_with_the_docs(tmp_path):
    proc, _ = _check(SLOW, tmp_path)
    assert proc.returncode == 0, proc.stdout


PAGE = """# t

Accuracy <!-- generated: residual_cnn.accuracy -->0.9000<!-- /generated --> here.

- a list item:

  <!-- generated: custom_layer.mismatch -->
  ```text
  old message
  ```
  <!-- /generated -->

<!-- generated: train_digits_cnn.output -->
```text
Epoch 1/1 - 43/43 - 0s - 6ms/step - loss: 1.0000
```
<!-- /generated -->
"""


def test_rewrite_and_compare(tmp_path):
    fresh = {"residual_cnn.accuracy": "0.9867",
             "custom_layer.mismatch": "```text\nnew message\n```",
             "train_digits_cnn.output": "```text\nEpoch 1/1 - 43/43 - 3s - 70ms/step - "
                                        "loss: 1.0000\n```"}
    new = gen.rewrite(PAGE, fresh)
    assert "-->0.9867<!--" in new
    assert "  ```text\n  new message\n  ```\n  <!-- /generated -->" in new
    assert gen.current(new)["custom_layer.mismatch"] == [fresh["custom_layer.mismatch"]]
    assert gen.rewrite(new, fresh) == new
    # Step times are not compared: a region that differs only there keeps its text.
    kept = gen.rewrite(PAGE, fresh, keep_equal=True)
    assert "0s - 6ms/step" in kept and "-->0.9867<!--" in kept
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    diffs = gen.mismatches(fresh, pages=[page])
    assert len(diffs) == 1 and "custom_layer.mismatch, residual_cnn.accuracy" in diffs[0]
    page.write_text(new)
    assert gen.mismatches(fresh, pages=[page]) == []
    assert gen.compared("residual_cnn.time", "3 s") is None
    assert gen.compared("machine", "a 2-core VM") is None


def test_machine_is_described():
    assert gen.describe_machine().startswith("a ")
