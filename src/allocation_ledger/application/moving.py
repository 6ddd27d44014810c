"""Move commands of the service API: swap, confirm, revert, forced moves, evacuation."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application.applying import Commands
from allocation_ledger.application.commands import CommandId, Intent, intent
from allocation_ledger.application.inputs import MoveIn, ResolveIn, parse
from allocation_ledger.application.session import Session
from allocation_ledger.application.views import MigrationView
from allocation_ledger.domain import moves
from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.domain.migration import RESIZE
from allocation_ledger.domain.values import Allocations

Request = Mapping[str, str] | None


def _plain(allocations: Mapping[str, Mapping[str, int]] | None) -> Allocations | None:
    if allocations is None:
        return None
    return {rp: dict(r) for rp, r in allocations.items()}


class MoveCommands(Commands):
    """Commands that move an instance's resources. Each takes the generations it depends on
    and appends everything in one write; a conflict at any step changes nothing."""

    store: EventStore

    def _move(self, it: Intent, migration_uuid: str, decide: Callable[[Session], object],
              new: Iterable[str] = ()) -> MigrationView:
        """Run one move command; the migration as the command left it. ``new``: the
        migration consumer the command creates (see :func:`run`'s ``new_consumers``)."""
        return self._apply(it, decide,
                           lambda r: MigrationView.of(r.migration(migration_uuid)), new)

    def swap(
        self,
        instance_uuid: str,
        migration_uuid: str,
        expected_generation: int,
        *,
        kind: str = RESIZE,
        destination: Mapping[str, Mapping[str, int]] | None = None,
        request: Request = None,
        command_id: CommandId | None = None,
    ) -> MigrationView:
        """Start a resize, cold migration (``kind="migration"``) or live migration
        (``"live-migration"``): the instance's whole allocation and devices go to the new
        migration consumer ``migration_uuid`` and the context opens. The instance is left
        empty and then claims its destination with ``expected_generation=None``; or pass
        ``destination`` to claim it in the same write."""
        cmd = parse(MoveIn, instance_uuid=instance_uuid, migration_uuid=migration_uuid,
                    expected_generation=expected_generation, destination=destination)
        it = intent("swap", command_id, request, cmd, kind)
        return self._move(it, cmd.migration_uuid, lambda s: moves.swap(
            s, cmd.instance_uuid, cmd.migration_uuid, kind, cmd.expected_generation, it.meta,
            _plain(cmd.destination)), new=[cmd.migration_uuid])

    def confirm(
        self, migration_uuid: str, expected_generation: int, *, request: Request = None,
        command_id: CommandId | None = None,
    ) -> MigrationView:
        """Confirm a move (or a live migration's success): the migration's source
        allocation and old devices are released; the context closes as confirmed."""
        cmd = parse(ResolveIn, migration_uuid=migration_uuid,
                    expected_generation=expected_generation)
        it = intent("confirm", command_id, request, cmd)
        return self._move(it, cmd.migration_uuid, lambda s: moves.confirm(
            s, cmd.migration_uuid, cmd.expected_generation, it.meta))

    def revert(
        self,
        migration_uuid: str,
        expected_generation: int | None,
        instance_generation: int | None,
        *,
        request: Request = None,
        command_id: CommandId | None = None,
    ) -> MigrationView:
        """Revert a move, roll back a failed live migration or a move that found no host:
        the instance's destination is released and its source allocation and old devices come
        back from the migration, in one write. ``instance_generation`` is ``None`` when the
        instance holds nothing (no destination was claimed)."""
        cmd = parse(ResolveIn, migration_uuid=migration_uuid,
                    expected_generation=expected_generation,
                    instance_generation=instance_generation)
        it = intent("revert", command_id, request, cmd)
        return self._move(it, cmd.migration_uuid, lambda s: moves.revert(
            s, cmd.migration_uuid, cmd.expected_generation, cmd.instance_generation, it.meta))

    def force_live_migrate(
        self,
        instance_uuid: str,
        migration_uuid: str,
        destination_root: str,
        expected_generation: int,
        *,
        request: Request = None,
        command_id: CommandId | None = None,
    ) -> MigrationView:
        """Live migrate to a named host without scheduling: swap, plus a blind copy of the
        allocation to ``destination_root``. Refused (:class:`NestedAllocationMove`, nothing
        written) when the allocation spans more than one provider."""
        cmd = parse(MoveIn, instance_uuid=instance_uuid, migration_uuid=migration_uuid,
                    expected_generation=expected_generation, destination_root=destination_root)
        it = intent("force_live_migrate", command_id, request, cmd)
        dest = cmd.destination_root
        if dest is None:
            raise InvalidRequest("a forced live migration needs destination_root")
        return self._move(it, cmd.migration_uuid, lambda s: moves.force_live_migrate(
            s, cmd.instance_uuid, cmd.migration_uuid, dest, cmd.expected_generation, it.meta),
            new=[cmd.migration_uuid])

    def evacuate(
        self,
        instance_uuid: str,
        migration_uuid: str,
        expected_generation: int,
        *,
        destination: Mapping[str, Mapping[str, int]] | None = None,
        destination_root: str | None = None,
        request: Request = None,
        command_id: CommandId | None = None,
    ) -> MigrationView:
        """Evacuate from a failed host: the instance holds its source and ``destination``
        (scheduled) or a blind copy on ``destination_root`` (forced; refused for nested
        allocations) at once, until :meth:`complete_evacuation`."""
        cmd = parse(MoveIn, instance_uuid=instance_uuid, migration_uuid=migration_uuid,
                    expected_generation=expected_generation, destination=destination,
                    destination_root=destination_root)
        it = intent("evacuate", command_id, request, cmd)
        return self._move(it, cmd.migration_uuid, lambda s: moves.evacuate(
            s, cmd.instance_uuid, cmd.migration_uuid, cmd.expected_generation, it.meta,
            destination=_plain(cmd.destination), destination_root=cmd.destination_root),
            new=[cmd.migration_uuid])

    def complete_evacuation(
        self, migration_uuid: str, instance_generation: int, *, request: Request = None,
        command_id: CommandId | None = None,
    ) -> MigrationView:
        """The evacuated host was cleaned up: remove the instance's source share."""
        cmd = parse(ResolveIn, migration_uuid=migration_uuid,
                    instance_generation=instance_generation)
        it = intent("complete_evacuation", command_id, request, cmd)
        return self._move(it, cmd.migration_uuid, lambda s: moves.complete_evacuation(
            s, cmd.migration_uuid, cmd.instance_generation, it.meta))
