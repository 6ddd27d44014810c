"""What a projection is: a name, the tables it owns, and one handler per event type.

Handlers are ``functools.singledispatch`` functions of ``(event, rows)``: they read the
groups of their event's stream from the :class:`~projections.workset.Workset` and put back
new ones, and do nothing else, so replaying the same events always writes the same rows.
Events a projection has no handler for fall to the base function and change nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from projections.workset import GroupTable, Workset


class Handler(Protocol):
    """A ``functools.singledispatch`` function of ``(event, rows)``."""

    @property
    def registry(self) -> Mapping[Any, Callable[..., None]]: ...

    def __call__(self, /, *args: Any, **kwargs: Any) -> None: ...

    def dispatch(self, cls: Any) -> Callable[..., None]: ...


@dataclass(frozen=True)
class Projection:
    """A read model: its name, its tables (grouped by stream) and its event handler."""

    name: str
    groups: tuple[GroupTable, ...]
    handler: Handler
    _handled: dict[type, bool] = field(default_factory=dict, compare=False, repr=False)

    def handles(self, event: object) -> bool:
        """True when the projection has a handler for this type of event."""
        kind = type(event)
        if kind not in self._handled:
            self._handled[kind] = self.handler.dispatch(kind) is not self.handler.registry[object]
        return self._handled[kind]

    def apply(self, event: object, rows: Workset) -> None:
        """Let the handler change the rows for one event."""
        self.handler(event, rows)
