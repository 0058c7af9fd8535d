"""Every ```python block of README.md and docs/*.md runs, and prints what the page says.

A page's python blocks run in order as one script (one namespace, as a reader pasting
them one after the other would run them) in a fresh interpreter whose working directory
is a temporary folder, so the files a block writes land there. The script keeps the
page's line numbers: a traceback names the page and the line of the failing code.

Other fence tags (```text, ```bash, a bare fence) never run; pseudocode uses them.

A block that states its output is followed by an *output block*: the line
``<!-- output -->`` (invisible on the rendered page), then a ```text fence holding
exactly what the python block prints on stdout. Only blank lines may stand between the
python block's closing fence and the marker. The comparison ignores trailing spaces and
trailing blank lines; a line holding only ``...`` stands for any number of lines, and the
times of a ``fit(verbose=2)`` epoch line (``- 0s - 1ms/step``) are not compared.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OUTPUT_MARKER = "<!-- output -->"
SENTINEL = "<<tinynet-docs-block {}>>"
#: An opening fence, as CommonMark reads one: its tag is the first word of the info string.
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<tag>[^`\s]*)[^`]*$")
TIMES = re.compile(r"(?m)^(Epoch \d+/\d+ - \d+/\d+) - \d+s - \d+ms/step")
SCRIPTS = pathlib.Path(tempfile.gettempdir()) / "tinynet-docs-scripts"
#: Seconds one page may take: generous, for a cold Numba cache compiling its kernels.
TIMEOUT = 900


@dataclasses.dataclass
class Block:
    tag: str
    first: int            # 1-based line number of the first code line
    fence_line: int       # 1-based line number of the opening fence
    lines: list[str]      # dedented code lines
    expected: str | None = None   # the output block's text, for a python block that has one


def fenced_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a markdown page, each with its output block attached."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, tag = opening.group("indent", "fence", "tag")
        j = i + 1
        while j < len(lines) and not re.match(rf"^ *{re.escape(fence)}{fence[0]}*\s*$", lines[j]):
            j += 1
        if j == len(lines):
            raise ValueError(f"line {i + 1}: a {fence}{tag} fence is never closed")
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip()
                for line in lines[i + 1:j]]
        blocks.append(Block(tag, i + 2, i + 1, body))
        i = j + 1
    _attach_outputs(lines, blocks)
    return blocks


def _attach_outputs(lines: list[str], blocks: list[Block]) -> None:
    marked = {n for n, line in enumerate(lines, 1) if line.strip() == OUTPUT_MARKER}
    for before, block in zip([None, *blocks], blocks):
        marker = block.fence_line - 1
        while marker >= 1 and not lines[marker - 1].strip():
            marker -= 1
        if marker not in marked:
            continue
        marked.discard(marker)
        where = f"line {block.fence_line}"
        if block.tag != "text":
            raise ValueError(f"{where}: an output block must be a ```text fence, not {block.tag!r}")
        gap = lines[before.first - 1 + len(before.lines):marker - 1] if before else None
        if before is None or before.tag != "python" or any(line.strip() for line in gap[1:]):
            raise ValueError(f"{where}: {OUTPUT_MARKER} must follow a ```python block directly")
        before.expected = "\n".join(block.lines)
    if marked:
        raise ValueError(f"line {min(marked)}: {OUTPUT_MARKER} without a ```text block after it")


def page_script(text: str) -> tuple[str, list[Block]]:
    """The page's python blocks as one script with the page's line numbers; before each
    block (on its opening fence's line) a statement prints a sentinel that separates the
    blocks' outputs."""
    blocks = [b for b in fenced_blocks(text) if b.tag == "python"]
    script = [""] * (len(text.splitlines()) + 1)
    for n, block in enumerate(blocks):
        script[block.fence_line - 1] = f"print({SENTINEL.format(n)!r}, flush=True)"
        script[block.first - 1:block.first - 1 + len(block.lines)] = block.lines
    script[-1] = f"print({SENTINEL.format('end')!r}, flush=True)"
    return "\n".join(script) + "\n", blocks


def split_outputs(stdout: str, count: int) -> list[str]:
    parts = re.split(r"<<tinynet-docs-block (?:\d+|end)>>\n", stdout)
    assert len(parts) == count + 2, f"the script stopped early:\n{stdout[-2000:]}"
    return parts[1:-1]


def _normalize(text: str) -> list[str]:
    return [line.rstrip() for line in TIMES.sub(r"\1 - <time>", text).rstrip("\n ").split("\n")]


def output_matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is ``expected``, a ``...`` line standing for any lines."""
    want, got = _normalize(expected), _normalize(actual)
    memo: dict[tuple[int, int], bool] = {}

    def match(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(want):
                memo[i, j] = j == len(got)
            elif want[i] == "...":
                memo[i, j] = any(match(i + 1, k) for k in range(j, len(got) + 1))
            else:
                memo[i, j] = j < len(got) and want[i] == got[j] and match(i + 1, j + 1)
        return memo[i, j]

    return match(0, 0)


def _pages_with_code() -> list[pathlib.Path]:
    return [p for p in PAGES if any(b.tag == "python" for b in fenced_blocks(p.read_text()))]


def test_the_pages_parse():
    """Every fence closes and every output marker sits under a python block."""
    for page in PAGES:
        try:
            fenced_blocks(page.read_text())
        except ValueError as exc:
            pytest.fail(f"{page.relative_to(ROOT)}: {exc}")


@pytest.mark.parametrize("page", _pages_with_code(), ids=lambda p: str(p.relative_to(ROOT)))
def test_page_code_runs(page, tmp_path):
    script, blocks = page_script(page.read_text())
    # A fixed path, rewritten only when the page changed: Numba's cache of a kernel defined
    # in a block (writing_a_layer.md) is keyed by the file's path and time stamp, so it is
    # reused, not compiled and cached anew under another name on every run.
    SCRIPTS.mkdir(parents=True, exist_ok=True)
    path = SCRIPTS / page.relative_to(ROOT).as_posix().replace("/", "__")
    if not path.is_file() or path.read_text() != script:
        path.write_text(script)
    env = {**os.environ, "MPLBACKEND": "Agg"}
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([sys.executable, str(path)], cwd=work, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)
    name = page.relative_to(ROOT)
    stderr = proc.stderr.replace(str(path), str(page))
    assert proc.returncode == 0, f"{name}: a python block failed\n{stderr[-4000:]}"
    for block, out in zip(blocks, split_outputs(proc.stdout, len(blocks))):
        if block.expected is not None:
            assert output_matches(block.expected, out), (
                f"{name}:{block.first}: the block printed\n{out}\n"
                f"but its output block says\n{block.expected}")


def test_output_matching_rules():
    assert output_matches("a\n...\nd", "a\nb\nc\nd\n")
    assert output_matches("a\n...\nb", "a\nb")
    assert not output_matches("a\nb", "a\nb\nc")
    assert output_matches("x  \n\n", "x")
    line = "Epoch 2/2 - 3/3 - {} - loss: 0.5000"
    assert output_matches(line.format("0s - 1ms/step"), line.format("12s - 345ms/step"))
    assert not output_matches(line.format("0s - 1ms/step"), line.format("0s - 1ms/step") + "1")


def test_blocks_and_outputs_are_found():
    text = ("# t\n\n```python\nprint(1)\n```\n\n<!-- output -->\n```text\n1\n```\n\n"
            "```text\nnot run\n```\n\n  ```python\n  x = 2\n  ```\n")
    script, blocks = page_script(text)
    assert [b.first for b in blocks] == [4, 17]
    assert blocks[0].expected == "1" and blocks[1].expected is None
    assert script.splitlines()[3] == "print(1)" and script.splitlines()[16] == "x = 2"
    with pytest.raises(ValueError, match="must follow a ```python block"):
        fenced_blocks("```text\na\n```\n<!-- output -->\n```text\nb\n```\n")
    with pytest.raises(ValueError, match="without a ```text block"):
        fenced_blocks("```python\na\n```\n<!-- output -->\n")
