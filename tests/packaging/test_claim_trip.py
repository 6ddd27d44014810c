"""A claim's trip from ``Ledger.claim`` down to the recorder's ``insert_events``: at most
ten modules, on every store, group commit on and off.

How it is counted: the recorder's ``insert_events`` is wrapped to capture the stack as it
is called; from the frame of ``Ledger.claim`` up, every distinct source file of the project
or of ``eventsourcing`` on the stack is one module (a module entered twice counts once;
the standard library, psycopg and the test's own wrapper do not count).
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import pytest

import allocation_ledger
from allocation_ledger import open_ledger
from tests.builders import a_host, new_id

MAX_MODULES = 10
PROJECT = Path(allocation_ledger.__file__).parent
LIBRARY = Path(pytest.importorskip("eventsourcing").__file__).parent


def modules_of(stack: traceback.StackSummary) -> list[str]:
    """The project's and the library's modules on ``stack`` from ``Ledger.claim`` up, in
    order, each once."""
    facade = str(PROJECT / "application" / "ledger.py")
    start = max(i for i, frame in enumerate(stack)
                if frame.filename == facade and frame.name == "claim")
    found: list[str] = []
    for frame in stack[start:]:
        path = Path(frame.filename)
        for root in (PROJECT, LIBRARY):
            if path.is_relative_to(root):
                name = f"{root.name}/{path.relative_to(root)}"
                if name not in found:
                    found.append(name)
    return found


@pytest.mark.parametrize("group_commit", [False, True], ids=["alone", "grouped"])
def test_a_claim_reaches_the_recorder_through_at_most_ten_modules(
        url: str, group_commit: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_ledger(url, group_commit=group_commit) as ledger:
        host = a_host(ledger, vcpu=10)
        recorder = type(ledger.store.recorder)
        insert = recorder.insert_events
        stacks: list[traceback.StackSummary] = []

        def spied(self: Any, *args: Any, **kwargs: Any) -> Any:
            stacks.append(traceback.extract_stack())
            return insert(self, *args, **kwargs)

        monkeypatch.setattr(recorder, "insert_events", spied)
        ledger.claim(new_id(), {host: {"VCPU": 1}}, None, project_id="p", user_id="u")
    assert len(stacks) == 1, "one claim, one insert"
    trip = modules_of(stacks[0])
    assert trip[0] == "allocation_ledger/application/ledger.py"
    assert len(trip) <= MAX_MODULES, trip


def test_the_count_sees_every_module_once() -> None:
    """The counter itself: a stack through the façade, a module entered twice and a
    frame outside the project and the library."""
    facade = str(PROJECT / "application" / "ledger.py")
    frames = [traceback.FrameSummary("/elsewhere/caller.py", 1, "main"),
              traceback.FrameSummary(facade, 1, "claim"),
              traceback.FrameSummary(str(PROJECT / "application" / "command_ids.py"), 1, "a"),
              traceback.FrameSummary(facade, 2, "outcome"),
              traceback.FrameSummary(str(LIBRARY / "persistence.py"), 1, "put"),
              traceback.FrameSummary("/usr/lib/python3/threading.py", 1, "run")]
    assert modules_of(traceback.StackSummary.from_list(frames)) == [
        "allocation_ledger/application/ledger.py",
        "allocation_ledger/application/command_ids.py", "eventsourcing/persistence.py"]
