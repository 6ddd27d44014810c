"""Nova's own moves through Placement's allocation writes, run as the ledger's move commands.

``PUT``/``POST /allocations`` and ``DELETE /allocations/{uuid}`` ask :mod:`.domain.nova_moves`
whether the write is Nova's swap, revert or confirm of a move; if it is, the request becomes
that one command (``swap``, ``revert``, ``confirm``, or ``release`` of a migration with no
destination), with the request's one command id, so the move gets its migration context and
history, and a retry with the same ``Idempotency-Key`` is answered from the record (the
consumers are read through the request's ledger, which answers a retry as of before the
first run). The consumers are read only when the write's shape can be a move.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from allocation_ledger.domain import nova_moves
from allocation_ledger.domain.consumer import MIGRATION
from allocation_ledger.domain.errors import MigrationNotFound
from allocation_ledger.domain.migration import IN_PROGRESS
from allocation_ledger.domain.nova_moves import Abort, Confirm, Entry, Held, NovaMove, Revert
from allocation_ledger.http.context import Ctx


def written_as_move(ctx: Ctx, writes: Sequence[Mapping[str, Any]]) -> bool:
    """Run ``writes`` (one request's, as ``allocations._write`` makes them) as the move
    command they are, if they are one; ``True`` when they were."""
    sent = ctx.at_least(1, 38)  # before, the type is the stored one or Placement's default
    entries = [Entry(w["consumer_uuid"], w["allocations"], w["expected_generation"],
                     w["project_id"], w["user_id"], w["consumer_type"] if sent else None)
               for w in writes]
    names = nova_moves.named(entries)
    if not names:
        return False
    move = nova_moves.recognise(entries, {uuid: held(ctx, uuid) for uuid in names})
    if move is None:
        return False
    _run(ctx, move, f"{ctx.method} /allocations")
    return True


def deleted_as_move(ctx: Ctx, consumer_uuid: str) -> bool:
    """Run ``DELETE /allocations/{consumer_uuid}`` as the confirm of the move it ends, if
    it ends one; ``True`` when it did."""
    move = nova_moves.recognise_delete(held(ctx, consumer_uuid))
    if move is None:
        return False
    _run(ctx, move, "DELETE /allocations")
    return True


def held(ctx: Ctx, consumer_uuid: str) -> Held:
    """What the rule needs of one consumer, read through the request's ledger."""
    view = ctx.ledger.consumer(consumer_uuid)
    move = None
    if view.consumer_type == MIGRATION:
        try:
            found = ctx.ledger.migration(consumer_uuid)
        except MigrationNotFound:  # a plain consumer that calls itself a migration
            found = None
        if found is not None:
            move = nova_moves.Move(found.instance_uuid, found.kind,
                                   found.status == IN_PROGRESS,
                                   found.destination_root is not None)
    # every consumer ever written has a type; one never written reads with none
    return Held(consumer_uuid, view.consumer_type is not None, view.generation,
                view.allocations, view.project_id, view.user_id,
                view.migration_uuid is not None, move)


def _run(ctx: Ctx, move: NovaMove, asked: str) -> None:
    """The move's one command, its events saying which request it was recognised in."""
    args = ctx.write()
    args["request"] = {**args["request"], "reason": _reason(move, asked)}
    ledger = ctx.ledger
    if isinstance(move, nova_moves.Swap):
        ledger.swap(move.instance_uuid, move.migration_uuid, move.instance_generation,
                    kind=move.kind, **args)
    elif isinstance(move, Revert):
        ledger.revert(move.migration_uuid, move.migration_generation,
                      move.instance_generation, **args)
    elif isinstance(move, Confirm):
        ledger.confirm(move.migration_uuid, move.migration_generation, **args)
    else:
        ledger.release(move.migration_uuid, move.migration_generation, **args)


def _reason(move: NovaMove, asked: str) -> str:
    if isinstance(move, nova_moves.Swap):
        return (f"{asked}: instance {move.instance_uuid}'s allocations moved to new "
                f"consumer {move.migration_uuid}, recognised as the swap of a move "
                f"(kind {move.kind})")
    if isinstance(move, Revert):
        return (f"{asked}: migration {move.migration_uuid}'s allocations moved back to its "
                "instance, recognised as the revert of the move")
    if isinstance(move, Abort):
        return (f"{asked}: migration {move.migration_uuid} emptied before a destination was "
                "claimed, recognised as the release of the move")
    return (f"{asked}: migration {move.migration_uuid} emptied, recognised as the confirm "
            "of the move")
