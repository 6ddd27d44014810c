"""§5.5 for the read models: each projection must show exactly what a replay shows.

The read models are loaded once, before the replay (:mod:`readrows`; the ``projections``
package is imported lazily: it is optional and lives outside ``src``). Each projection shows the
ledger up to its own position, so it is compared with the replay when the replay reaches
that position: a projection that lags is not drift, a row that disagrees is.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any

from eventsourcing.persistence import Notification

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application.views import ProviderView
from allocation_ledger.audit import findings as f
from allocation_ledger.audit.findings import Finding, Where
from allocation_ledger.audit.readrows import ReadRows, read_rows
from allocation_ledger.audit.state import LedgerState
from allocation_ledger.domain.errors import StoreNotFound
from allocation_ledger.projections import store as where
from allocation_ledger.projections.binding import binding_problem

#: Findings reported per projection; beyond that, a note says how many more there were.
LIMIT = 20

Expected = Callable[[LedgerState, ReadRows], list[tuple[str, Any, Any]]]


def load(store: EventStore, url: str | None = None) -> tuple[ReadRows | None, list[str]]:
    """What the read models say (``url``: where they live; default: beside the ledger), or
    ``None`` and a note saying why there is nothing to compare."""
    try:
        engine = where.open_engine(store.env, url, create=False)  # an audit creates nothing
    except StoreNotFound as err:
        return None, [f"projection drift not checked: {err}"]
    try:
        found = read_rows(engine)
    finally:
        engine.dispose()
    if not any(found.positions.values()):
        return None, ["projection drift not checked: no read model has been built yet"]
    return found, []


def unbound(store: EventStore, read: ReadRows) -> list[Finding]:
    """A finding for each read model that followed a history the ledger no longer has."""
    found = []
    for name, at in sorted(read.positions.items()):
        problem = binding_problem(store, name, at, read.followed.get(name))
        if problem is not None:
            found.append(Finding.at(Where(at), f.PROJECTION_AHEAD, problem,
                                    {"projection": name}, {"projection_position": at}))
    return found


def compare(name: str, state: LedgerState, read: ReadRows) -> tuple[list[Finding], list[str]]:
    """Findings where projection ``name`` disagrees with ``state`` (the replay at its
    position), and notes (a projection this audit does not know, findings left out)."""
    expected = EXPECTED.get(name)
    if expected is None:
        return [], [f"projection {name} not compared: the audit does not know it"]
    where = Where(state.position, state.time)
    found = [
        Finding.at(where, f.PROJECTION_DRIFT,
                   f"read model {name} has {what} = {shown}, the ledger has {truth}",
                   {"projection": name, "key": what},
                   {"projection_position": read.positions.get(name, 0)})
        for what, shown, truth in expected(state, read)
    ]
    notes = []
    if len(found) > LIMIT:
        notes.append(f"projection {name}: {len(found) - LIMIT} more differences not listed")
    return found[:LIMIT], notes


class Due:
    """The comparisons still to make, each at its projection's position."""

    def __init__(self, read: ReadRows) -> None:
        self.read = read
        self.findings: list[Finding] = []
        self.notes: list[str] = []
        self._pending = sorted((at, name) for name, at in read.positions.items())

    def before(self, position: int, state: LedgerState) -> None:
        """Compare every projection whose position is below ``position`` (the next event
        to replay) with ``state``."""
        while self._pending and self._pending[0][0] < position:
            at, name = self._pending.pop(0)
            if at < state.position:
                self.notes.append(f"projection {name} not compared: it is at position {at}, "
                                  "before the audited range")
                continue
            found, notes = compare(name, state, self.read)
            self.findings += found
            self.notes += notes

    def reached(self, batch: Sequence[Notification], first: int) -> int:
        """Where in ``batch`` (from ``first``, after :meth:`before` of its position) the
        replay reaches the next comparison: the index of the first event beyond it (the
        length of ``batch`` when none is)."""
        if not self._pending:
            return len(batch)
        return bisect_right(batch, self._pending[0][0], first, key=_position)

    def finish(self, state: LedgerState, *, whole: bool = False) -> None:
        """The replay is over: compare what is due; a read model beyond it is an error when
        the replay went to the ledger's end (``whole``: it shows events the ledger has not),
        else a note."""
        self.before(state.position + 1, state)
        for at, name in self._pending:
            if whole:
                self.findings.append(Finding.at(
                    Where(at), f.PROJECTION_AHEAD,
                    f"read model {name} is at position {at}, beyond the ledger's end "
                    f"({state.position}): the ledger was truncated or restored from an older "
                    "copy; rebuild the read models (projections rebuild)",
                    {"projection": name}, {"projection_position": at,
                                           "ledger_position": state.position}))
            else:
                self.notes.append(f"projection {name} not compared: it is at position {at}, "
                                  f"beyond the audited range (up to {state.position})")


def _position(notification: Notification) -> int:
    return notification.id


ABSENT = "no row"


def _differences(shown: dict[Any, Any], truth: dict[Any, Any],
                 label: Callable[[Any], str]) -> list[tuple[str, Any, Any]]:
    return [(label(key), shown.get(key, ABSENT), truth.get(key, ABSENT))
            for key in sorted(shown.keys() | truth.keys(), key=str)
            if shown.get(key, ABSENT) != truth.get(key, ABSENT)]


def _host_usage(state: LedgerState, read: ReadRows) -> list[tuple[str, Any, Any]]:
    truth = {(uuid, rc): c.used for uuid, p in state.providers.items() if not p.deleted
             for rc, c in ProviderView.of(p).classes.items()}
    return _differences(read.usages, truth, lambda k: f"usage of {k[1]} on provider {k[0]}")


def _allocations(state: LedgerState, read: ReadRows) -> list[tuple[str, Any, Any]]:
    generations = {uuid: c.generation for uuid, c in state.consumers.items()}
    holdings = {uuid: c.allocations for uuid, c in state.consumers.items() if c.allocations}
    return (_differences(read.generations, generations,
                         lambda k: f"the generation of consumer {k}")
            + _differences(read.holdings, holdings,
                           lambda k: f"the allocations of consumer {k}"))


def _devices(state: LedgerState, read: ReadRows) -> list[tuple[str, Any, Any]]:
    truth = {(uuid, rc, d): h for uuid, p in state.providers.items() if not p.deleted
             for rc, devices in p.devices.items() for d, h in devices.items()}
    return _differences(read.holders, truth,
                        lambda k: f"the holder of device {k[2]} ({k[1]}) on provider {k[0]}")


def _migrations(state: LedgerState, read: ReadRows) -> list[tuple[str, Any, Any]]:
    truth = {m.uuid: m.status for m in state.migrations()}
    return _differences(read.statuses, truth, lambda k: f"the status of migration {k}")


EXPECTED: dict[str, Expected] = {"host_usage": _host_usage, "allocations": _allocations,
                                 "devices": _devices, "migrations": _migrations}
