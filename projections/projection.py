"""What a projection is: a name, the tables it owns, and its event rules (one per event type).

The rules are ``functools.singledispatch`` functions of ``(event, rows)``: they read the
groups of their event's stream from the :class:`~.row_groups.RowGroups` and put back
new ones, and do nothing else, so replaying the same events always writes the same rows.
Events a projection has no rule for fall to the base function and change nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from allocation_ledger.projections.row_groups import GroupTable, RowGroups


class EventRules(Protocol):
    """A ``functools.singledispatch`` function of ``(event, rows)``."""

    @property
    def registry(self) -> Mapping[Any, Callable[..., None]]: ...

    def __call__(self, /, *args: Any, **kwargs: Any) -> None: ...

    def dispatch(self, cls: Any) -> Callable[..., None]: ...


@dataclass(frozen=True)
class Projection:
    """A read model: its name, its tables (grouped by stream) and its event rules."""

    name: str
    groups: tuple[GroupTable, ...]
    rules: EventRules
    _found: dict[type, Callable[..., None] | None] = field(
        default_factory=dict, compare=False, repr=False)

    def rule_for(self, event: object) -> Callable[[Any, RowGroups], None] | None:
        """The rule for this type of event (``None``: the projection ignores it).

        The dispatch is looked up once per type: a catch-up calls it for every event.
        """
        kind = type(event)
        if kind not in self._found:
            found = self.rules.dispatch(kind)
            self._found[kind] = None if found is self.rules.registry[object] else found
        return self._found[kind]

    def handles(self, event: object) -> bool:
        """True when the projection has a rule for this type of event."""
        return self.rule_for(event) is not None
