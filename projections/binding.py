"""Which ledger history a read model belongs to: each projection records the chain hash of
the event at its position, and must find that same event there when it resumes (a ledger
restored from an older copy, truncated or rewritten no longer has it)."""

from __future__ import annotations

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.adapters.notifications import chain_hash, chained


def binding_problem(store: EventStore, name: str, position: int,
                    followed: bytes | None) -> str | None:
    """Why read model ``name``, at ``position`` where it recorded the chain hash
    ``followed``, no longer belongs to this ledger (``None``: it does, or it cannot tell)."""
    if position <= 0 or not chained(store):
        return None
    found = store.recorder.select_notifications(position, 1)
    rebuild = "; rebuild the read models (projections rebuild)"
    if not found or found[0].id != position:
        head = store.recorder.max_notification_id() or 0
        return (f"read model {name} is at position {position}, but the ledger has no event "
                f"there (it ends at {head}): the ledger was truncated or restored from an "
                f"older copy{rebuild}")
    if followed is not None and chain_hash(found[0]) != followed:
        return (f"read model {name} followed another history: the ledger's event at "
                f"position {position} is not the one it applied (restored from an older "
                f"copy, or rewritten){rebuild}")
    return None
