"""What ships stays apart from what measures and tests it.

The runtime package (``src/allocation_ledger`` and the read side in ``projections/``) imports
neither the repository's ``benchmarks`` nor its ``tests``, nor ``unittest.mock`` (a test tool
has no place in a running ledger). The benchmarks and the scripts are run from the
repository root (``python -m benchmarks...``, ``python scripts/...``), so none of them
edits ``sys.path`` to find a package, and no script imports ``tests``.

Every import statement is read, function-level ones too, as in ``test_import_graph.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = [ROOT / "src" / "allocation_ledger", ROOT / "projections"]
FORBIDDEN_AT_RUNTIME = ("benchmarks", "tests", "unittest.mock")


def sources(*folders: Path) -> list[Path]:
    """Every ``.py`` file under ``folders``, each once (the read side is also reached through
    ``src/allocation_ledger/projections``, a link to ``projections/``)."""
    found = {path.resolve() for folder in folders for path in folder.rglob("*.py")}
    return sorted(found)


def imported(tree: ast.AST) -> set[str]:
    """The absolute names a module imports: ``from a.b import c`` gives ``a.b`` and
    ``a.b.c`` (so ``from unittest import mock`` is seen as ``unittest.mock``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def forbidden(tree: ast.AST, banned: tuple[str, ...]) -> list[str]:
    """The imported names that are, or are inside, one of ``banned``."""
    return sorted(name for name in imported(tree)
                  if any(name == b or name.startswith(b + ".") for b in banned))


def path_edits(tree: ast.AST) -> list[int]:
    """Lines that call ``sys.path.insert``, ``.append`` or ``.extend``."""
    return sorted(
        node.lineno for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("insert", "append", "extend")
        and isinstance(path := node.func.value, ast.Attribute) and path.attr == "path"
        and isinstance(path.value, ast.Name) and path.value.id == "sys"
    )


def parsed(path: Path) -> ast.AST:
    return ast.parse(path.read_text(), str(path))


def test_the_walk_sees_the_runtime_the_benchmarks_and_the_scripts() -> None:
    runtime = sources(*RUNTIME)
    assert ROOT / "projections" / "readmodels.py" in runtime
    assert ROOT / "src" / "allocation_ledger" / "bootstrap.py" in runtime
    assert ROOT / "benchmarks" / "__main__.py" in sources(ROOT / "benchmarks")
    assert ROOT / "scripts" / "audit.py" in sources(ROOT / "scripts")


def test_the_runtime_imports_no_benchmark_test_or_mock() -> None:
    found = {str(p.relative_to(ROOT)): forbidden(parsed(p), FORBIDDEN_AT_RUNTIME)
             for p in sources(*RUNTIME)}
    assert {path: names for path, names in found.items() if names} == {}


def test_no_benchmark_or_script_edits_sys_path() -> None:
    found = {str(p.relative_to(ROOT)): path_edits(parsed(p))
             for p in sources(ROOT / "benchmarks", ROOT / "scripts")}
    assert {path: lines for path, lines in found.items() if lines} == {}


def test_no_benchmark_or_script_imports_the_tests() -> None:
    found = {str(p.relative_to(ROOT)): forbidden(parsed(p), ("tests",))
             for p in sources(ROOT / "benchmarks", ROOT / "scripts")}
    assert {path: names for path, names in found.items() if names} == {}


@pytest.mark.parametrize(("source", "banned"), [
    ("import benchmarks.runner", ["benchmarks.runner"]),
    ("def f():\n    from benchmarks import stats", ["benchmarks", "benchmarks.stats"]),
    ("from tests.projections.random_ledger import populate",
     ["tests.projections.random_ledger", "tests.projections.random_ledger.populate"]),
    ("from unittest import mock", ["unittest.mock"]),
    ("from unittest.mock import patch", ["unittest.mock", "unittest.mock.patch"]),
    ("import unittest", []),
    ("import testsuite\nfrom benchmarking import x", []),
    ("from . import tests", []),
])
def test_the_checks_see_a_banned_import(source: str, banned: list[str]) -> None:
    assert forbidden(ast.parse(source), FORBIDDEN_AT_RUNTIME) == banned


def test_the_checks_see_a_path_edit() -> None:
    source = "import sys\nsys.path.insert(0, 'x')\nsys.path.append('y')\nsys.argv.append('z')"
    assert path_edits(ast.parse(source)) == [2, 3]
