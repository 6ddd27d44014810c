"""The package's import graph: no circle anywhere, a pure domain, layers that import only
downward, an application at most four floors deep, and handlers that see only the unit of
work, their inputs, the catalog and the domain.

Every ``import`` statement of every module is read (function-level imports too: a lazy
import still ties two modules together), so a circle cannot hide behind ``importlib`` or an
import inside a function.
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

import allocation_ledger
import benchmarks

PACKAGE = "allocation_ledger"


def modules(package: ModuleType = allocation_ledger) -> dict[str, Path]:
    """Every module of a package, by dotted name, with its source file."""
    assert package.__file__ is not None
    found = {package.__name__: Path(package.__file__)}
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
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


def graph(package: ModuleType = allocation_ledger) -> dict[str, set[str]]:
    known = modules(package)
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


@pytest.mark.parametrize("package", [allocation_ledger, benchmarks], ids=lambda p: p.__name__)
def test_no_import_circles(package: ModuleType) -> None:
    assert circles(graph(package)) == []


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


#: What each layer may import besides itself: dependencies point down, toward the domain.
#: Only the composition root (``bootstrap``) and what stands on it (the command line, the
#: HTTP API, the package's own ``__init__``) wire the read side and the service together.
LAYERS: dict[str, set[str]] = {
    "domain": set(),
    "config": {"domain"},
    "adapters": {"domain", "config"},
    "application": {"domain", "adapters"},
    "projections": {"domain", "adapters", "config", "application"},
    "audit": {"domain", "adapters", "application", "projections"},
    "metrics": {"adapters", "application"},
    "placement": {"domain", "application"},
    "bootstrap": {"domain", "adapters", "config", "application", "projections"},
    "http": {"domain", "application", "audit", "bootstrap", "metrics"},
    "cli": {"domain", "adapters", "config", "application", "projections", "audit",
            "bootstrap", "http", "metrics", "placement", "root"},
    "root": {"domain", "application", "bootstrap"},
}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "root"


def layer_breaches(edges: dict[str, set[str]]) -> list[str]:
    """Each import of a layer that the layer may not make (``module -> target``)."""
    return sorted(f"{name} -> {target}" for name, targets in edges.items()
                  for target in targets
                  if _layer(target) != _layer(name)
                  and _layer(target) not in LAYERS[_layer(name)])


def test_every_layer_is_known() -> None:
    assert {_layer(name) for name in graph()} <= set(LAYERS)


def test_layers_import_only_downward() -> None:
    assert layer_breaches(graph()) == []


def test_a_layer_breach_is_found() -> None:
    """The check itself: the service importing the CLI, or the read side the service's
    composition root, is reported; the composition root importing the read side is not."""
    edges = {f"{PACKAGE}.application.ledger": {f"{PACKAGE}.cli.output"},
             f"{PACKAGE}.projections.runner": {f"{PACKAGE}.bootstrap"},
             f"{PACKAGE}.bootstrap": {f"{PACKAGE}.projections.readmodels"}}
    assert layer_breaches(edges) == [
        f"{PACKAGE}.application.ledger -> {PACKAGE}.cli.output",
        f"{PACKAGE}.projections.runner -> {PACKAGE}.bootstrap"]


def test_handlers_see_only_the_unit_of_work_their_inputs_and_the_domain() -> None:
    """A handler loads through the unit of work and lets the domain decide: adding a command
    touches its domain module, one handler, one input model (and the facade's method)."""
    prefix = f"{PACKAGE}.application.handlers"
    allowed = {f"{PACKAGE}.application.inputs", f"{PACKAGE}.application.unit_of_work",
               f"{PACKAGE}.application.catalog"}  # a scan no version guards (delete_trait)
    seen = {name: targets for name, targets in graph().items() if name.startswith(prefix)}
    assert len(seen) >= 4, sorted(seen)  # the package and its three modules
    assert {name: sorted(t for t in targets if t not in allowed
                         and not t.startswith(f"{PACKAGE}.domain"))
            for name, targets in seen.items()} == {name: [] for name in seen}


#: How many floors ``application/`` may have: the façade's readers (retries, repairing) on
#: the façade, the façade on the write path and the handlers, those on the unit of work.
MAX_FLOORS = 4


def floors(edges: dict[str, set[str]], prefix: str) -> dict[str, list[str]]:
    """Each module under ``prefix`` with its longest chain of imports under ``prefix``,
    itself first: a module stands one floor above everything it imports, a module that
    imports none of them is on the first floor (the graph has no circle)."""
    inside = {name: {t for t in targets if t.startswith(prefix)}
              for name, targets in edges.items() if name.startswith(prefix)}
    chains: dict[str, list[str]] = {}

    def chain(name: str) -> list[str]:
        if name not in chains:
            below = [chain(t) for t in sorted(inside[name]) if t in inside]
            chains[name] = [name, *max(below, key=len, default=[])]
        return chains[name]

    for name in inside:
        chain(name)
    return chains


def test_the_application_is_at_most_four_floors_deep() -> None:
    """``application/`` (every import, lazy and type-only ones too): a command's way down
    is façade, write path, unit of work."""
    chains = floors(graph(), f"{PACKAGE}.application")
    assert len(chains) >= 15, sorted(chains)  # the walk sees the whole application
    deepest = max(chains.values(), key=len)
    assert len(deepest) <= MAX_FLOORS, " -> ".join(deepest)


def test_a_deep_import_chain_is_found() -> None:
    """The measure itself: a chain of five modules is five floors, whatever else imports."""
    edges = {"p.a": {"p.b", "q.x"}, "p.b": {"p.c"}, "p.c": {"p.d", "p.e"}, "p.d": {"p.e"},
             "p.e": set(), "p.f": {"p.e"}, "q.x": set()}
    chains = floors(edges, "p.")
    assert chains["p.a"] == ["p.a", "p.b", "p.c", "p.d", "p.e"]
    assert (len(chains["p.f"]), len(chains["p.e"])) == (2, 1)
