"""The README's first code block holds the two commands, and CI runs the second one."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```(?:bash)?\n(.*?)```", text, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_readme_has_two_commands():
    commands = _readme_commands()
    assert len(commands) == 2
    assert commands[0].startswith("pip install") and "examples/" in commands[0]
    assert commands[1].startswith("pip install") and "pytest" in commands[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    match = re.search(r"^TEST_CMD='(.*)'$", ci, re.M)
    assert match, "TEST_CMD not found in .ci/run"
    assert match.group(1) == _readme_commands()[1]


def test_main_example_exists():
    script = _readme_commands()[0].split("&&")[-1].split()[-1]
    assert (ROOT / script).is_file()
