"""Placement's own gabbits against a real ``allocation-ledger serve``: run, expect, compare.

One gabbit file runs against a FRESH server over a fresh store (an SQLite file, or a new
PostgreSQL schema), started from the ledger's own interpreter; gabbi runs in
``.venv-placement`` (``tests/gabbits/runner.py``) as a subprocess, since Placement's pins
and the ledger's conflict. Placement's data fixtures are rebuilt by HTTP calls to that
server (``tests/gabbits/data_fixtures.py``).

``expectations.toml`` lists, per file, the tests that fail today with a short reason, or the
reason the whole file cannot run (a data fixture needs an endpoint the server lacks). The
ratchet (``test_gabbits.py``) fails on any difference from it, either way.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from allocation_ledger.http.server import free_port, spawned

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RUNNER = HERE / "runner.py"
EXPECTATIONS = HERE / "expectations.toml"
RUN_TIMEOUT = 300.0

PASSING = ("passed", "xfail")  # xfail: marked so in Placement's file, failed as marked

# The 15 policy/RBAC files of the endpoints the server claims (issue 27's policy set);
# those of traits, aggregates, candidates and the reshaper belong to the issue-26 set.
POLICY_AREAS = ("allocations", "inventory", "resource-classes", "resource-provider", "usage")
POLICY_KINDS = ("policy", "legacy-rbac", "secure-rbac")
POLICY_FILES = frozenset(f"{area}-{kind}.yaml" for area in POLICY_AREAS
                         for kind in POLICY_KINDS)
# Files of issue 26: traits, aggregates, allocation candidates, reshaper, provider-list
# filters, granular, same-subtree, root-required, mappings, any-traits, sharing.
ISSUE_26_STEMS = ("traits", "aggregate", "allocation-candidates", "reshaper",
                  "resource-provider-resources-query", "resource-provider-any-traits",
                  "granular", "same-subtree", "allocations-mappings", "shared-resources",
                  "resource-provider-aggregates")
SETS = ("core", "policy", "issue-26")


def set_of(name: str) -> str:
    """The set a gabbit file counts in: ``core``, ``policy`` or ``issue-26``."""
    if name in POLICY_FILES:
        return "policy"
    if any(name.startswith(stem) for stem in ISSUE_26_STEMS):
        return "issue-26"
    return "core"


def placement_python() -> str | None:
    """``$LEDGER_PLACEMENT_PYTHON`` or ``.venv-placement/bin/python`` (made by
    ``scripts/placement_venv.sh``), when it exists."""
    found = os.environ.get("LEDGER_PLACEMENT_PYTHON") or str(
        ROOT / ".venv-placement" / "bin" / "python")
    return found if Path(found).exists() else None


@dataclass(frozen=True)
class Outcome:
    """One gabbi test's result: ``passed``, ``failed``, ``xfail``, ``skipped`` or
    ``cannot-run``, with the request (as written in the file, and the path as sent) and
    why it failed."""

    name: str
    outcome: str
    method: str = ""
    url: str = ""
    detail: str = ""
    path: str = ""

    @property
    def passed(self) -> bool:
        return self.outcome in PASSING


def list_files(python: str) -> list[str]:
    """The gabbit file names shipped in the installed openstack-placement."""
    done = subprocess.run([python, str(RUNNER), "--list"], capture_output=True, text=True,
                          timeout=60, check=True)
    return list(json.loads(done.stdout))


# serve's options for a file whose Placement fixture configures Placement (CORSFixture)
SERVE_ARGS = {"cors.yaml": ("--cors-allowed-origin", "http://valid.example.com",
                            "--cors-allow-header", "openstack-api-version")}


def run_file(python: str, name: str, url: str) -> list[Outcome]:
    """Every test of gabbit file ``name`` run in order against a fresh server over the
    (fresh) store at ``url``, authenticating and authorizing as Placement's fixture for
    the file does (:func:`server_args`)."""
    with tempfile.TemporaryDirectory() as folder:
        return run_against(python, name, spawned(url, args=server_args(name, Path(folder))))


def server_args(name: str, folder: Path) -> list[str]:
    """``serve``'s options for gabbit file ``name``: Placement's ``noauth2`` (the fixture's
    ``auth_strategy``), with the secure-RBAC or the legacy policy defaults as the file's
    fixture chooses (:func:`placement_setup`); the ``-policy.yaml`` files' open policy (every
    rule but ``admin_api`` allows anyone, as Placement's ``OpenPolicyFixture``) is written
    to a policy file in ``folder``."""
    setup = placement_setup(name)
    args = ["--auth", "noauth2", "--policy-defaults",
            "secure" if setup == "secure" else "legacy"]
    if setup == "open":
        from allocation_ledger.http.policy_rules import defaults

        path = folder / "policy.json"
        path.write_text(json.dumps({rule.name: "@" for rule in defaults()
                                    if rule.name != "admin_api"}))
        args += ["--policy-file", str(path)]
    return args + list(SERVE_ARGS.get(name, ()))


def run_on_placement(python: str, name: str, folder: Path) -> list[Outcome]:
    """The same against OpenStack Placement 16 itself (the harness's control), over a
    fresh SQLite database in ``folder``."""
    return run_against(python, name, placement_spawned(python, folder / f"{name}.db",
                                                        placement_setup(name)))


def placement_setup(name: str) -> str:
    """How Placement's own fixture for this file configures it (``placement_server.py``'s
    SETUP): by the file's name, which says which policy fixture it uses."""
    if name.endswith("-secure-rbac.yaml"):
        return "secure"
    if name.endswith("-policy.yaml"):
        return "open"
    return "cors" if name == "cors.yaml" else "legacy"


def run_against(python: str, name: str, serving: AbstractContextManager[int]
                ) -> list[Outcome]:
    """Run gabbit file ``name`` against the server ``serving`` starts (it yields the port)."""
    with serving as port:
        done = subprocess.run([python, str(RUNNER), "--server", f"127.0.0.1:{port}", name],
                              capture_output=True, text=True, timeout=RUN_TIMEOUT,
                              check=False)
    if done.returncode != 0:
        raise RuntimeError(f"gabbi runner failed on {name}: {done.stderr[-3000:]}")
    return [Outcome(**test) for test in json.loads(done.stdout)["tests"]]


@contextmanager
def placement_spawned(python: str, database: Path, setup: str = "legacy",
                      timeout: float = 120.0) -> Iterator[int]:
    """Placement 16 (``placement_server.py``) as a child process on a free port."""
    port = free_port()
    proc = subprocess.Popen([python, str(HERE / "placement_server.py"), str(port),
                             str(database), setup], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"Placement exited: {proc.stderr.read().decode()[-3000:]}"
                                   if proc.stderr else "Placement exited")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("Placement did not come up") from None
                time.sleep(0.2)
        yield port
    finally:
        proc.kill()
        proc.wait()


@contextmanager
def sqlite_url(folder: Path, name: str) -> Iterator[str]:
    """A fresh SQLite store file for one gabbit file."""
    yield f"sqlite:///{folder / (Path(name).stem + '.db')}"


@dataclass
class FileExpectation:
    """What one file is expected to do: run with these tests failing, or not run at all."""

    set: str
    tests: int
    cannot_run: str = ""
    failing: dict[str, str] = field(default_factory=dict)

    def expected(self, name: str) -> str:
        """``passed``, ``failed`` or ``cannot-run`` for the named test."""
        if self.cannot_run:
            return "cannot-run"
        return "failed" if name in self.failing else "passed"


def load_expectations(path: Path = EXPECTATIONS) -> dict[str, FileExpectation]:
    """The expectations file, by gabbit file name."""
    data = tomllib.loads(path.read_text())
    return {name: FileExpectation(set=entry["set"], tests=entry["tests"],
                                  cannot_run=entry.get("cannot_run", ""),
                                  failing=dict(entry.get("failing", {})))
            for name, entry in data["files"].items()}


def actual(outcome: Outcome) -> str:
    """An outcome as the expectations name it: ``passed``, ``failed`` or ``cannot-run``."""
    if outcome.passed:
        return "passed"
    return "cannot-run" if outcome.outcome == "cannot-run" else "failed"


def differences(expected: FileExpectation, outcomes: list[Outcome]) -> list[str]:
    """Every way the run differs from the expectation, one line each (empty: none)."""
    found = []
    names = {o.name for o in outcomes}
    for outcome in outcomes:
        want, got = expected.expected(outcome.name), actual(outcome)
        if want != got:
            why = expected.cannot_run or expected.failing.get(outcome.name, "")
            found.append(f"{outcome.name!r}: expected {want}{f' ({why})' if why else ''}, "
                         f"got {got}{': ' + outcome.detail if outcome.detail else ''}")
    found += [f"{name!r}: listed as failing but not in the file"
              for name in expected.failing if name not in names]
    if len(outcomes) != expected.tests:
        found.append(f"the file has {len(outcomes)} tests, the expectations say "
                     f"{expected.tests}")
    return found


def dump(results: dict[str, Any]) -> str:
    """Results as JSON (for ``--results`` files)."""
    return json.dumps(results, indent=1, sort_keys=True)


def python_or_exit() -> str:
    """The Placement interpreter, or exit with how to make it (for the scripts)."""
    python = placement_python()
    if python is None:
        sys.exit("no .venv-placement: run scripts/placement_venv.sh first")
    return python


def run_all(python: str, names: list[str], store: str, folder: Path,
            workers: int = 2) -> dict[str, list[Outcome]]:
    """Run the named files (each against its own fresh server and store: ``sqlite`` or
    ``postgres``; ``placement``: Placement 16 itself, the control), ``workers`` at a time;
    outcomes by file name, in the order given."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.stores import postgres_schema_url

    def one(name: str) -> list[Outcome]:
        if store == "placement":
            return run_on_placement(python, name, folder)
        if store == "postgres":
            with postgres_schema_url() as url:
                return run_file(python, name, url + "&pool_size=2&max_overflow=2")
        with sqlite_url(folder, name) as url:
            return run_file(python, name, url)

    with ThreadPoolExecutor(workers) as pool:
        return dict(zip(names, pool.map(one, names), strict=True))
