"""Replay the ledger through the domain code and check every invariant at every position.

:class:`Auditor` applies one event at a time to a :class:`LedgerState`, runs the per-event
checks at once, and notes which (provider, class) pairs the event touched; when a command
ends (:class:`~allocation_ledger.domain.command.CommandEnds`) it checks those pairs. A problem
is reported where it appears and not again while it stays the same; if it is mended and
reappears it is reported again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol
from uuid import UUID

from eventsourcing.persistence import Notification

from allocation_ledger.adapters.decoding import UNREADABLE, Decoder
from allocation_ledger.audit import checks
from allocation_ledger.audit import findings as f
from allocation_ledger.audit.findings import Finding, Where
from allocation_ledger.audit.index import HoldingsIndex, Key
from allocation_ledger.audit.ledger_events import as_uuid, why
from allocation_ledger.audit.state import LedgerState, kind_of
from allocation_ledger.domain.command import CommandEnds
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.holdings import NOTHING
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider


class AfterEvent(Protocol):
    """A check of the aggregate as replayed after an event (the snapshot check), made
    where its version is a multiple of its class's interval in ``every``."""

    @property
    def every(self) -> Mapping[type, int]:
        """The interval of each aggregate class checked."""

    def __call__(self, where: Where, aggregate: Any) -> list[Finding]:
        """Findings about ``aggregate`` as replayed at ``where``."""


_NO_INTERVALS: Mapping[type, int] = {}
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

    def observe_all(self, batch: Iterable[Notification], decoder: Decoder) -> None:
        """Decode, apply and check each event of ``batch``, in order (a record that cannot
        be decoded is reported where it is, as :func:`~.ledger_events.entries` decodes)."""
        state, findings, opens = self.state, self.findings, self._commands.opens_command
        aggregates, apply_to, settle = state.aggregates, state.apply_to, state.settle
        provider_event, consumer_event = self._provider_event, self._consumer_event
        after = self._after_event
        every = after.every if after is not None else _NO_INTERVALS
        for n in batch:
            self.events += 1
            position, stream = n.id, n.originator_id
            if type(stream) is not UUID:
                stream = as_uuid(stream)
            try:
                event = decoder(n)
            except UNREADABLE as err:
                findings.append(Finding.at(_where(position, None, stream), f.UNREADABLE,
                                           f"event {n.topic} v{n.originator_version} of "
                                           f"stream {stream} cannot be read: {why(err)}"))
                continue
            where = _where(position, event.timestamp, stream)
            if opens(event):
                self.end_command()
            held: Any = aggregates.get(stream)
            kind = kind_of(held)
            before = _before(held, kind)
            aggregate: Any
            problem, aggregate = apply_to(position, event, held)
            if problem is not None:
                findings.append(Finding.at(where, f.ORDER, problem,
                                           {"version": n.originator_version}))
            if aggregate is not held:
                kind = kind_of(aggregate)
            if kind is Provider:
                provider_event(where, aggregate, event, before)
            elif kind is Consumer or kind is Migration:
                consumer_event(where, aggregate, event, before, kind)
            interval = every.get(type(aggregate))
            if interval and not aggregate.version % interval and after is not None:
                findings.extend(after(where, aggregate))
            if kind is not Provider:  # a provider is never let go
                settle(stream, aggregate)

    def _provider_event(self, where: Where, provider: Provider, event: Any,
                        before: Any) -> None:
        what = _what(event)
        if what is _CHANGED:
            usages, rp = event.usages, provider.uuid
            found = checks.check_growth(where, provider, before, usages, self._inventories)
            if found:
                self.findings.extend(found)
            touched = self._usage
            for rc in usages:
                touched[(rp, rc)] = where
            for rc in event.holds:
                self._devices[(rp, rc)] = where
        elif what is _DEVICES_SET:
            self._devices[(provider.uuid, event.resource_class)] = where
        elif what is _DELETED:
            for rc, used in provider.usages.items():
                if used:
                    self.findings.append(Finding.at(
                        where, f.DELETED_IN_USE,
                        f"provider {provider.uuid} was deleted with {used} {rc} allocated",
                        {"provider_uuid": provider.uuid, "resource_class": rc},
                        {"usage": used}))

    def _consumer_event(self, where: Where, consumer: Consumer, event: Any,
                        before: Any, kind: type) -> None:
        allocations, held, status = before
        self.index.move_parts(consumer.uuid, allocations, held, consumer.allocations,
                              consumer.devices, self._usage, self._devices, where)
        if allocations is not consumer.allocations:
            found = checks.check_consumer(where, consumer, self.state.providers)
            if found:
                self.findings.extend(found)
        if kind is Migration and _what(event) is _RESOLVED and isinstance(consumer, Migration):
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


def _before(aggregate: Any, kind: type | None) -> Any:
    """What a check needs of the aggregate (of ``kind``, :func:`kind_of` it) before the
    event (appliers replace, never edit, these values, so keeping references is enough):
    a provider's usages, a consumer's allocations, devices and migration status."""
    if kind is Provider:
        return aggregate.usages
    if kind is Migration:
        return aggregate.allocations, aggregate.devices, aggregate.status
    if kind is Consumer:
        return aggregate.allocations, aggregate.devices, None
    return NOTHING.allocations, NOTHING.devices, None


#: What the auditor does with an event, by its class (:func:`_what`)
_CHANGED, _DEVICES_SET, _DELETED, _RESOLVED, _OTHER = range(5)
_WHAT: dict[type, int] = {}


def _what(event: Any) -> int:
    """Which of the event classes the auditor looks at ``event`` is an instance of, found
    once per class (``isinstance`` of the events' ``ABCMeta`` classes is a Python call)."""
    cls = type(event)
    try:
        return _WHAT[cls]
    except KeyError:
        found = _WHAT[cls] = next(
            (what for what, base in ((_CHANGED, Provider.AllocationsChanged),
                                     (_DEVICES_SET, Provider.DevicesSet),
                                     (_DELETED, Provider.Deleted),
                                     (_RESOLVED, Migration.Resolved))
             if issubclass(cls, base)), _OTHER)
        return found


_new, _set = object.__new__, object.__setattr__


def _where(position: int, time: Any, stream: Any) -> Where:
    """``Where(position, time, stream)``, without the frozen dataclass's per-field
    ``object.__setattr__`` (one for every event)."""
    where = _new(Where)
    _set(where, "__dict__", {"position": position, "time": time, "stream": stream})
    return where
