"""The package's import graph: no circle anywhere, and a pure domain.

Every ``import`` statement of every module is read (function-level imports too: a lazy
import still ties two modules together), so a circle cannot hide behind ``importlib`` or an
import inside a function.
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
from pathlib import Path

import pytest

import allocation_ledger

PACKAGE = "allocation_ledger"


def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name, with its source file."""
    found = {PACKAGE: Path(allocation_ledger.__file__)}
    for info in pkgutil.walk_packages(allocation_ledger.__path__, PACKAGE + "."):
        spec = importlib.util.find_spec(info.name)
        assert spec is not None and spec.origin is not None, info.name
        found[info.name] = Path(spec.origin)
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's own modules that module ``name`` imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            # ``from pkg import mod`` depends on pkg.mod; ``from pkg import name`` on pkg.
            subs = [f"{base}.{alias.name}" for alias in node.names]
            targets = [sub for sub in subs if sub in known]
            if len(targets) < len(subs):
                targets.append(base)
        else:
            continue
        out.update(t for t in targets if t in known and t != name)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_walk_sees_the_whole_package() -> None:
    edges = graph()
    for layer in ("domain", "application", "adapters", "projections", "audit", "cli"):
        assert any(name.startswith(f"{PACKAGE}.{layer}.") for name in edges), layer
    assert edges[f"{PACKAGE}.bootstrap"], "bootstrap imports the package"


def test_no_import_circles() -> None:
    assert circles(graph()) == []


def test_a_circle_is_found() -> None:
    """The detector itself: a two-module circle and a three-module one are reported."""
    edges = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert sorted(circles(edges)) == [["a", "b"], ["c", "d", "e"]]


@pytest.mark.parametrize("layer", ["domain"])
def test_the_domain_imports_only_itself(layer: str) -> None:
    prefix = f"{PACKAGE}.{layer}"
    outside = {
        name: sorted(t for t in targets if not t.startswith(prefix))
        for name, targets in graph().items()
        if name.startswith(prefix + ".") or name == prefix
    }
    assert {name: targets for name, targets in outside.items() if targets} == {}
