"""Placement 16's own functional API tests (its gabbi files) against a real server: the
ratchet.

One test per gabbit file and store (SQLite; PostgreSQL marked ``postgres`` and ``slow``): the
file runs in order against a fresh ``allocation-ledger serve`` over a fresh store, and every test's
outcome must be the one ``expectations.toml`` states: passing unless listed as failing (with
its reason), or not run when the file's data fixture needs an endpoint the server lacks.
A test that starts to pass fails here too, so the list stays true and only shrinks:
regenerate it with ``.venv/bin/python -m tests.gabbits.record``.

gabbi and openstack-placement live in ``.venv-placement`` (``scripts/placement_venv.sh``;
their pins conflict with the ledger's); without it these tests skip with that reason,
except under ``CI=true``, where it is expected and its absence fails.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gabbits import harness
from tests.stores import postgres_schema_url

EXPECTED = harness.load_expectations()
# One file per data fixture of Placement's (rebuilt here by HTTP), run against Placement 16
# itself: the control that the harness and the rebuilt fixtures are Placement's.
CONTROL = {
    "AllocationFixture": "reshaper.yaml",
    "SharedStorageFixture": "allocation-candidates.yaml",
    "NUMAAggregateFixture": "allocation-candidates-bug-1792503.yaml",
    "NUMANetworkFixture": "allocation-candidates-root-required.yaml",
    "DeepNUMANetworkFixture": "same-subtree-deep.yaml",
    "NonSharedStorageFixture": "allocation-candidates-member-of.yaml",
    "GranularFixture": "granular.yaml",
    "NeutronQoSMultiSegmentFixture": "allocation-candidates-any-traits-groups.yaml",
}
# Every file on SQLite in the default run; on PostgreSQL too with --slow (the same requests
# through the same HTTP layer over the second store: a long trial, half the files' time).
STORES = ["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.slow])]


@pytest.fixture(scope="module")
def python() -> str:
    """The interpreter of ``.venv-placement``; skip (fail under CI) without it."""
    found = harness.placement_python()
    if found is None:
        reason = ("openstack-placement and gabbi are not installed: run "
                  "scripts/placement_venv.sh (or set LEDGER_PLACEMENT_PYTHON)")
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " (CI=true: the placement venv is expected)")
        pytest.skip(reason)
    return found


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store URL for one gabbit file."""
    if request.param == "postgres":
        with postgres_schema_url() as url:
            yield url + "&pool_size=2&max_overflow=2"
    else:
        yield f"sqlite:///{tmp_path / 'ledger.db'}"


def test_the_expectations_name_every_gabbit_file_of_the_package(python: str) -> None:
    assert sorted(EXPECTED) == harness.list_files(python)


def test_every_failure_has_a_reason() -> None:
    for name, entry in EXPECTED.items():
        assert entry.set == harness.set_of(name), name
        assert all(why.strip() for why in entry.failing.values()), name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_gabbit_file_fares_as_expected(name: str, python: str, store: str) -> None:
    outcomes = harness.run_file(python, name, store)
    found = harness.differences(EXPECTED[name], outcomes)
    assert not found, (
        f"{name}: {len(found)} outcome(s) differ from tests/gabbits/expectations.toml "
        "(if the server got better, regenerate it: .venv/bin/python -m "
        "tests.gabbits.record " + name + "):\n  " + "\n  ".join(found))


@pytest.mark.slow  # the harness's own check (Placement 16 in-process per file): --slow
@pytest.mark.parametrize("name", sorted(CONTROL.values()))
def test_placement_itself_passes_every_test_with_the_fixtures_rebuilt_by_http(
        name: str, python: str, tmp_path: Path) -> None:
    outcomes = harness.run_on_placement(python, name, tmp_path)
    failed = [f"{o.name!r}: {o.outcome}: {o.detail}" for o in outcomes if not o.passed]
    assert outcomes and not failed, "\n".join(failed)
