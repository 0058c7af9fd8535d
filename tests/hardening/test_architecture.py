"""The package's shape, read from its sources: no import cycles (imports inside functions
count), ``tinynet.tuning`` a leaf, only operations importing kernels, and the kernel
conventions of docs/writing_a_layer.md."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tinynet"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))
            if "__pycache__" not in p.parts}


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Every tinynet module ``path`` imports, at any depth of its code."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target in known:
                found.add(target)
    found.discard(name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(path, name, known) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _parents(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_no_import_cycles():
    graph = _graph()
    # a module's import of its own parent packages is how Python loads it, not an edge
    graph = {name: targets - _parents(name) for name, targets in graph.items()}
    assert _cycles(graph) == []


def test_tuning_imports_nothing_from_tinynet():
    graph = _graph()
    for name in ("tinynet.tuning", "tinynet.tuning.__main__"):
        outside = {t for t in graph[name] if not t.startswith("tinynet.tuning")} - {"tinynet"}
        assert outside == set(), name


# -- kernel conventions (docs/writing_a_layer.md, "Writing Numba kernels") ---------------------
_DECORATOR = re.compile(r"@(?:numba\.)?njit\(([^)]*)\)")


def _kernel_files() -> list[Path]:
    return [p for p in _modules().values()
            if re.search(r"@(?:numba\.)?njit\b", p.read_text(encoding="utf-8"))]


def test_every_kernel_is_cached_and_exact():
    for path in _kernel_files():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"@(?:numba\.)?njit\s*\n", text), f"{path}: bare @njit"
        for options in _DECORATOR.findall(text):
            assert "cache=True" in options, f"{path}: @njit({options}) without cache=True"
            assert "fastmath" not in options, f"{path}: @njit({options}) with fastmath"


def _kernel_bodies(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
                "njit" in ast.unparse(d) for d in node.decorator_list):
            yield node


def test_kernels_read_neither_tuning_nor_the_environment():
    for path in _kernel_files():
        for fn in _kernel_bodies(path):
            body = ast.unparse(fn)
            for word in ("tuning.", "os.environ", "getenv"):
                assert word not in body, f"{path}:{fn.lineno} {fn.name} reads {word}"


# The one tinynet import a kernel module may make beyond its sibling kernels: the JIT's own
# settings (``_jit`` reads NUMBA_SLP_VECTORIZE through tuning's environment reader).
_KERNEL_IMPORT_EXCEPTIONS = {("tinynet.kernels._jit", "tinynet.tuning")}


def test_kernel_modules_import_only_sibling_kernels():
    """Kernels import NumPy, Numba and other kernels, never an operation, a layer or
    tuning: each kernel module's tinynet imports are kernel modules themselves."""
    graph = _graph()
    modules = _modules()
    kernel_names = {name for name, path in modules.items() if path in set(_kernel_files())}
    kernel_names |= {n for n in modules if n.startswith("tinynet.kernels.")}
    for name in sorted(kernel_names):
        for target in sorted(graph[name]):
            if target in kernel_names or target in ("tinynet", "tinynet.kernels"):
                continue
            assert (name, target) in _KERNEL_IMPORT_EXCEPTIONS, f"kernel module {name} imports {target}"


# Who reaches the kernels: the operations (``tinynet.ops``) and the kernels themselves. A
# kernel's integer codes stop there too; beyond them, only the JIT's settings for the tools
# that compile ahead and warm up, and the normalization package's public ``folds``.
_KERNEL_IMPORTERS = {
    ("tinynet.tools.compile_ahead", "tinynet.kernels._jit"),
    ("tinynet.tools.compile_ahead", "tinynet.kernels.completion"),
    ("tinynet.tools.warmup", "tinynet.kernels._jit"),
    ("tinynet.layers.regularization.normalization", "tinynet.kernels.normalization.folds"),
}


def test_only_operations_import_kernels():
    """Layers, optimizers, the exporter and the rest call operations, never a kernel."""
    modules = _modules()
    found = {(name, target) for name, targets in _graph().items()
             if not name.startswith(("tinynet.ops", "tinynet.kernels"))
             for target in targets  # the kernel modules, not their (empty) packages
             if target.startswith("tinynet.kernels.") and modules[target].name != "__init__.py"}
    assert sorted(found - _KERNEL_IMPORTERS) == []
    assert sorted(_KERNEL_IMPORTERS - found) == [], "stale entries in _KERNEL_IMPORTERS"


def test_no_module_over_600_lines():
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 600}
    assert long == {}
