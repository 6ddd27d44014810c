"""A fresh process opening an existing ledger resumes each projection where it stopped: it
reads each event once, from the lowest stored position, and applies it only to the
projections behind it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.projections.readmodels import ReadModels, ledger_position
from benchmarks.random_ledger import populate
from tests.projections.conftest import LargeLedger
from tests.projections.expected import folded, stored
from tests.projections.processes import start_script
from tests.projections.test_crashes import copy_of

NAMES = ("host_usage", "allocations", "devices", "migrations")


def run_script(*args: str) -> tuple[dict[str, int], int]:
    """Run ``rebuild_projections.py``; the positions and event count it printed."""
    process = start_script("rebuild_projections.py", "--quiet", *args)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    positions = {m[0]: int(m[1]) for m in re.findall(r"^(\w+) +position (\d+) of", out, re.M)}
    (events,) = re.findall(r"^(\d+) events in", out, re.M)
    return positions, int(events)


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_each_projection_resumes_where_it_stopped(
        kind: str, large_ledger: LargeLedger, tmp_path: Path) -> None:
    with copy_of(large_ledger, kind, tmp_path) as url, open_ledger(url) as ledger:
        first = large_ledger.head
        assert run_script("--url", url) == (dict.fromkeys(NAMES, first), first)
        populate(ledger, seed=5, steps=60)
        second = ledger_position(ledger)
        assert run_script("--url", url, "--resume", "--name", "migrations") == (
            {"migrations": second}, second - first)
        populate(ledger, seed=6, steps=60)
        third = ledger_position(ledger)

        positions, events = run_script("--url", url, "--resume")

        assert positions == dict.fromkeys(NAMES, third)
        assert events == third - first  # every event once, none of them before ``first``
        with ReadModels.of(ledger) as read:
            assert stored(read.engine) == folded(ledger)
