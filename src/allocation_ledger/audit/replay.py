"""Replay the ledger through the domain code and check every invariant at every position.

:class:`Auditor` applies one event at a time to a :class:`LedgerState`, runs the per-event
checks at once, and notes which (provider, class) pairs the event touched; when a command
ends (:class:`~allocation_ledger.domain.command.CommandEnds`) it checks those pairs. A problem
is reported where it appears and not again while it stays the same; if it is mended and
reappears it is reported again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from allocation_ledger.audit import checks
from allocation_ledger.audit import findings as f
from allocation_ledger.audit.findings import Finding, Where
from allocation_ledger.audit.index import HoldingsIndex, Key
from allocation_ledger.audit.ledger_events import Entry
from allocation_ledger.audit.state import LedgerState, kind_of
from allocation_ledger.domain.command import CommandEnds
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.holdings import NOTHING
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider

#: Called after each event with the event and the aggregate as replayed (snapshot checks).
AfterEvent = Callable[[Where, Any], list[Finding]]
Identity = tuple[str, tuple[tuple[str, str], ...]]


class Auditor:
    """Checks the ledger event by event; ``findings`` collects what it found."""

    def __init__(self, state: LedgerState | None = None,
                 after_event: AfterEvent | None = None) -> None:
        self.state = state or LedgerState()
        self.index = HoldingsIndex.of(self.state.consumers.values())
        self.findings: list[Finding] = []
        self.events = 0
        self._after_event = after_event
        self._commands = CommandEnds()
        self._usage: dict[Key, Where] = {}  # pairs touched by the command being applied
        self._devices: dict[Key, Where] = {}
        self._inventories: checks.Inventories = {}
        #: problems seen and not yet mended, per (provider, class) and aspect checked
        self._open: dict[tuple[Key, str], dict[Identity, Any]] = {}
        if self.state.position:
            self.check_everything()

    def observe(self, entry: Entry) -> None:
        """Apply and check one ledger event."""
        self.events += 1
        event, stream, state = entry.event, entry.stream, self.state
        where = _where(entry.position, event.timestamp if event is not None else None, stream)
        if event is None:
            self.findings.append(Finding.at(where, f.UNREADABLE,
                                            f"event {entry.topic} v{entry.version} of stream "
                                            f"{entry.stream} cannot be read: {entry.error}"))
            return
        if self._commands.opens_command(event):
            self.end_command()
        aggregate: Any = state.aggregates.get(stream)
        before = _before(aggregate)
        problem, aggregate = state.apply_to(entry.position, event, aggregate)
        if problem is not None:
            self.findings.append(Finding.at(where, f.ORDER, problem,
                                            {"version": entry.version}))
        kind = kind_of(aggregate)
        if kind is Provider:
            self._provider_event(where, aggregate, event, before)
        elif kind is Consumer or kind is Migration:
            self._consumer_event(where, aggregate, event, before)
        if self._after_event is not None:
            self.findings.extend(self._after_event(where, aggregate))
        if kind is not Provider:  # a provider is never let go
            state.settle(stream, aggregate)

    def _provider_event(self, where: Where, provider: Provider, event: Any,
                        before: Any) -> None:
        if isinstance(event, Provider.AllocationsChanged):
            self.findings.extend(checks.check_growth(where, provider, before, event.usages,
                                                     self._inventories))
            for rc in event.usages:
                self._usage[(provider.uuid, rc)] = where
            for rc in event.holds:
                self._devices[(provider.uuid, rc)] = where
        elif isinstance(event, Provider.DevicesSet):
            self._devices[(provider.uuid, event.resource_class)] = where
        elif isinstance(event, Provider.Deleted):
            for rc, used in provider.usages.items():
                if used:
                    self.findings.append(Finding.at(
                        where, f.DELETED_IN_USE,
                        f"provider {provider.uuid} was deleted with {used} {rc} allocated",
                        {"provider_uuid": provider.uuid, "resource_class": rc},
                        {"usage": used}))

    def _consumer_event(self, where: Where, consumer: Consumer, event: Any,
                        before: Any) -> None:
        allocations, held, status = before
        usage, devices = self.index.move_parts(consumer.uuid, allocations, held,
                                               consumer.allocations, consumer.devices)
        for key in usage:
            self._usage[key] = where
        for key in devices:
            self._devices[key] = where
        if allocations is not consumer.allocations:
            self.findings.extend(checks.check_consumer(where, consumer, self.state.providers))
        if isinstance(event, Migration.Resolved) and isinstance(consumer, Migration):
            self.findings.extend(checks.check_resolved_again(where, consumer, status))

    def end_command(self) -> None:
        """The command being applied is complete: check every pair it touched."""
        providers, index, report = self.state.providers, self.index, self._report
        for key, where in self._usage.items():
            report(key, "usage", checks.check_usage(where, key, providers.get(key[0]), index))
        for key, where in self._devices.items():
            report(key, "devices", checks.check_devices(where, key, providers.get(key[0]),
                                                        index))
        self._usage.clear()
        self._devices.clear()

    def check_everything(self) -> None:
        """Check every (provider, class) pair as of the current position."""
        where = Where(self.state.position, self.state.time)
        for rp, provider in self.state.providers.items():
            for rc in provider.usages:
                self._usage.setdefault((rp, rc), where)
            for rc in provider.devices:
                self._devices.setdefault((rp, rc), where)
        for key in self.index.allocated:
            self._usage.setdefault(key, where)
        for key in self.index.listed:
            self._devices.setdefault(key, where)
        self.end_command()

    def finish(self) -> None:
        """The last command is complete."""
        self.end_command()

    def _report(self, key: Key, aspect: str, found: list[Finding]) -> None:
        """Keep the findings that are new: not open yet, or open with another difference."""
        if not found:  # the common case: nothing wrong, and nothing open to close
            if self._open:
                self._open.pop((key, aspect), None)
            return
        was = self._open.get((key, aspect), {})
        now = {x.identity: x.numbers.get("difference", 0) for x in found}
        self.findings.extend(x for x in found if was.get(x.identity, None) != now[x.identity])
        self._open[(key, aspect)] = now


def _before(aggregate: Any) -> Any:
    """What a check needs of the aggregate before the event (appliers replace, never edit,
    these values, so keeping references is enough): a provider's usages, a consumer's
    allocations, devices and migration status."""
    kind = kind_of(aggregate)
    if kind is Provider:
        return aggregate.usages
    if kind is Migration:
        return aggregate.allocations, aggregate.devices, aggregate.status
    if kind is Consumer:
        return aggregate.allocations, aggregate.devices, None
    return NOTHING.allocations, NOTHING.devices, None


_new, _set = object.__new__, object.__setattr__


def _where(position: int, time: Any, stream: Any) -> Where:
    """``Where(position, time, stream)``, without the frozen dataclass's per-field
    ``object.__setattr__`` (one for every event)."""
    where = _new(Where)
    _set(where, "__dict__", {"position": position, "time": time, "stream": stream})
    return where
