"""docs/architecture.md tells the truth about the package map: its floors (the block under
"The floors (top imports bottom)") hold every top-level package and module of tinynet
exactly once, and every import in the code (inside functions too, and loads by name
through ``importlib``) goes to the same floor or a lower one, but for the upward imports
the page lists under "Upward imports", each of which the code still makes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.hardening.test_architecture import PACKAGE, _graph, _modules, _parents

DOC = PACKAGE.parent / "docs" / "architecture.md"
_FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)
_EXCEPTION = re.compile(r"^(tinynet(?:\.\w+)*) -> (tinynet(?:\.\w+)*): (\S.*)$")


def _section_block(heading: str) -> str:
    """The first fenced block after ``heading`` (a line of the page)."""
    text = DOC.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    assert heading + "\n" in lines, f"docs/architecture.md has no heading {heading!r}"
    after = text[text.index(heading + "\n"):]
    match = _FENCE.search(after)
    assert match, f"no code block after {heading!r}"
    return match.group(1)


def _floors() -> list[list[str]]:
    """The floors, top first: each a list of names as written ("layers/", "random")."""
    floors = []
    for line in _section_block("## The floors (top imports bottom)").splitlines():
        if not line.strip() or line[0].isspace():
            continue  # a description's continuation
        names = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        floors.append([n.strip() for n in names.split(",")])
    return floors


def _allowed_upward() -> dict[tuple[str, str], str]:
    allowed = {}
    for line in _section_block("### Upward imports").splitlines():
        if not line.strip():
            continue
        match = _EXCEPTION.match(line.strip())
        assert match, f"not 'module -> module: reason': {line!r}"
        allowed[(match.group(1), match.group(2))] = match.group(3)
    return allowed


def _top_level() -> dict[str, str]:
    """Every public top-level package ("layers/") and module ("random") of tinynet, by its
    dotted name."""
    found = {}
    for path in sorted(PACKAGE.iterdir()):
        if path.name.startswith("_"):
            continue
        if path.is_dir() and (path / "__init__.py").exists():
            found[f"tinynet.{path.name}"] = f"{path.name}/"
        elif path.suffix == ".py":
            found[f"tinynet.{path.stem}"] = path.stem
    return found


def _loads_by_name() -> dict[str, set[str]]:
    """Modules a module loads through ``importlib``: string constants naming a tinynet
    module, in a module that uses importlib."""
    modules = _modules()
    loads: dict[str, set[str]] = {}
    for name, path in modules.items():
        text = path.read_text(encoding="utf-8")
        if "importlib" not in text:
            continue
        loads[name] = {node.value for node in ast.walk(ast.parse(text))
                       if isinstance(node, ast.Constant) and node.value in modules
                       and node.value != name}
    return loads


def _edges() -> set[tuple[str, str]]:
    edges = {(a, b) for a, targets in _graph().items() for b in targets - _parents(a)}
    edges |= {(a, b) for a, targets in _loads_by_name().items() for b in targets - _parents(a)}
    return edges


def _floor_of() -> dict[str, int]:
    """Top-level dotted name -> floor index (0 = top)."""
    by_label = {label: name for name, label in _top_level().items()}
    return {by_label[label]: i for i, floor in enumerate(_floors())
            for label in floor if label in by_label}


def _top(name: str) -> str | None:
    """``tinynet.layers.dense`` -> ``tinynet.layers``; the facade ``tinynet`` -> None."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else None


def test_every_package_and_module_is_on_exactly_one_floor():
    labels = [label for floor in _floors() for label in floor]
    known = set(_top_level().values())
    unknown = sorted(set(labels) - known)
    assert unknown == [], f"docs/architecture.md's floors name what tinynet/ does not have: {unknown}"
    twice = sorted({label for label in labels if labels.count(label) > 1})
    assert twice == [], f"on more than one floor: {twice}"
    missing = sorted(known - set(labels))
    assert missing == [], f"on no floor of docs/architecture.md: {missing}"


def test_imports_go_down_or_are_listed():
    floor = _floor_of()
    allowed = _allowed_upward()
    upward = sorted(
        (a, b) for a, b in _edges()
        if _top(a) and _top(b) and _top(a) in floor and _top(b) in floor
        and floor[_top(b)] < floor[_top(a)])
    unlisted = [f"{a} -> {b}" for a, b in upward if (a, b) not in allowed]
    assert unlisted == [], (
        "imports up a floor of docs/architecture.md (move a package on the floors, or list "
        "the import under 'Upward imports' with its reason):\n  " + "\n  ".join(unlisted))
    stale = sorted(f"{a} -> {b}" for a, b in set(allowed) - set(upward))
    assert stale == [], (
        "docs/architecture.md lists upward imports the code does not make (or that are no "
        "longer upward):\n  " + "\n  ".join(stale))


def test_the_facade_is_the_only_module_off_the_floors():
    """Every module belongs to a top-level name on a floor, but ``tinynet`` itself."""
    floor = _floor_of()
    off = sorted(name for name in _modules() if name != "tinynet" and _top(name) not in floor)
    assert off == []
