"""The ledger's errors: one hierarchy under :class:`LedgerError`.

Every error carries structured fields (ids, resource class, numbers, generations) and a
message a person can act on. A command that raises one of these has written nothing.
"""

from __future__ import annotations

from typing import Any


class LedgerError(Exception):
    """Base class of every error the ledger raises on purpose."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields
        for key, value in fields.items():
            setattr(self, key, value)

    def to_dict(self) -> dict[str, Any]:
        """The error as plain data: its kind, message and fields."""
        return {"error": type(self).__name__, "message": self.message, **self.fields}


class InvalidRequest(LedgerError):
    """Raised when a command's input is malformed: bad ids, names, amounts or shapes."""


class InvalidInventory(InvalidRequest):
    """Raised when an inventory record breaks Placement's validation rules."""

    def __init__(self, provider_uuid: str, resource_class: str, reason: str) -> None:
        super().__init__(
            f"invalid inventory for {resource_class} on provider {provider_uuid}: {reason}",
            provider_uuid=provider_uuid,
            resource_class=resource_class,
            reason=reason,
        )


class InvalidAllocation(InvalidRequest):
    """Raised when an allocation amount breaks the min_unit, max_unit or step_size rule."""

    def __init__(
        self, consumer_uuid: str, provider_uuid: str, resource_class: str, amount: int, reason: str
    ) -> None:
        super().__init__(
            f"allocation of {amount} {resource_class} on provider {provider_uuid} for consumer "
            f"{consumer_uuid} is invalid: {reason}",
            consumer_uuid=consumer_uuid,
            provider_uuid=provider_uuid,
            resource_class=resource_class,
            amount=amount,
            reason=reason,
        )


class NotFound(LedgerError):
    """Base class for a named thing that does not exist."""


class ProviderNotFound(NotFound):
    """Raised when a command names a provider that was never registered or was deleted."""

    def __init__(self, provider_uuid: str) -> None:
        super().__init__(f"provider {provider_uuid} does not exist", provider_uuid=provider_uuid)


class MigrationNotFound(NotFound):
    """Raised when a command names a migration that does not exist."""

    def __init__(self, migration_uuid: str) -> None:
        super().__init__(
            f"migration {migration_uuid} does not exist", migration_uuid=migration_uuid
        )


class ConsumerNotFound(NotFound):
    """Raised when a command needs a consumer's allocations and the consumer holds none."""

    def __init__(self, consumer_uuid: str) -> None:
        super().__init__(
            f"consumer {consumer_uuid} holds no allocations", consumer_uuid=consumer_uuid
        )


class ProviderExists(LedgerError):
    """Raised when registering a provider whose UUID is already taken (or was used)."""

    def __init__(self, provider_uuid: str) -> None:
        super().__init__(
            f"provider {provider_uuid} already exists (a deleted provider's UUID is not reused)",
            provider_uuid=provider_uuid,
        )


class ProviderInUse(LedgerError):
    """Raised when deleting a provider that still has allocations or children."""

    def __init__(self, provider_uuid: str, reason: str) -> None:
        super().__init__(
            f"provider {provider_uuid} cannot be deleted: {reason}",
            provider_uuid=provider_uuid,
            reason=reason,
        )


class ProviderHasChildren(ProviderInUse):
    """Raised when deleting a provider that still has child providers."""

    def __init__(self, provider_uuid: str, children: list[str]) -> None:
        super().__init__(provider_uuid, f"it has children {', '.join(children)}")
        self.fields["children"] = children
        self.children = children


class InventoryInUse(LedgerError):
    """Raised when removing a resource class that still has allocations against it."""

    def __init__(self, provider_uuid: str, resource_class: str, used: int) -> None:
        super().__init__(
            f"cannot remove {resource_class} from provider {provider_uuid}: {used} still "
            "allocated",
            provider_uuid=provider_uuid,
            resource_class=resource_class,
            used=used,
        )


class ResourceClassNotOnProvider(LedgerError):
    """Raised when allocating a resource class the provider has no inventory for."""

    def __init__(self, provider_uuid: str, resource_class: str) -> None:
        super().__init__(
            f"provider {provider_uuid} has no inventory of {resource_class}",
            provider_uuid=provider_uuid,
            resource_class=resource_class,
        )


class InsufficientCapacity(LedgerError):
    """Raised when a write would push a provider's usage of a class above its capacity."""

    def __init__(
        self,
        provider_uuid: str,
        resource_class: str,
        requested: int,
        used: int,
        capacity: int,
    ) -> None:
        free = max(capacity - used, 0)
        super().__init__(
            f"provider {provider_uuid} cannot fit {requested} more {resource_class}: "
            f"{used} used of capacity {capacity}, {free} free",
            provider_uuid=provider_uuid,
            resource_class=resource_class,
            requested=requested,
            used=used,
            capacity=capacity,
            free=free,
        )


class DevicesUnavailable(LedgerError):
    """Raised when a claim needs more free devices of a class than a provider has, or names
    devices that are missing or held by someone else."""

    def __init__(
        self, provider_uuid: str, resource_class: str, needed: int, free: int, detail: str = ""
    ) -> None:
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"provider {provider_uuid} has {free} free {resource_class} devices, {needed} "
            f"needed{extra}",
            provider_uuid=provider_uuid,
            resource_class=resource_class,
            needed=needed,
            free=free,
            detail=detail,
        )


class DeviceInUse(LedgerError):
    """Raised when removing a device that a consumer holds, or declaring devices on a class
    that already has allocations."""

    def __init__(self, provider_uuid: str, resource_class: str, reason: str) -> None:
        super().__init__(
            f"devices of {resource_class} on provider {provider_uuid}: {reason}",
            provider_uuid=provider_uuid,
            resource_class=resource_class,
            reason=reason,
        )


class Conflict(LedgerError):
    """Base class for optimistic-concurrency conflicts: re-read, re-decide, try again."""


class ConsumerGenerationConflict(Conflict):
    """Raised when a consumer's generation is not the one the caller expected.

    ``expected`` and ``actual`` are ``None`` for a consumer that holds no allocations.
    Never retried inside the ledger: the caller re-reads and decides again.
    """

    def __init__(self, consumer_uuid: str, expected: int | None, actual: int | None) -> None:
        super().__init__(
            f"consumer {consumer_uuid} generation conflict: expected {expected}, "
            f"actual {actual}",
            consumer_uuid=consumer_uuid,
            expected=expected,
            actual=actual,
        )


class ProviderGenerationConflict(Conflict):
    """Raised when a provider's generation is not the one an inventory change expected."""

    def __init__(self, provider_uuid: str, expected: int, actual: int) -> None:
        super().__init__(
            f"provider {provider_uuid} generation conflict: expected {expected}, "
            f"actual {actual}",
            provider_uuid=provider_uuid,
            expected=expected,
            actual=actual,
        )


class ConcurrentUpdate(Conflict):
    """Raised when provider streams kept changing under a write until its retries ran out."""

    def __init__(self, provider_uuids: list[str], attempts: int) -> None:
        super().__init__(
            f"providers {', '.join(provider_uuids)} kept changing concurrently; gave up after "
            f"{attempts} attempts",
            provider_uuids=provider_uuids,
            attempts=attempts,
        )


class NestedAllocationMove(LedgerError):
    """Raised when a forced move is asked for an allocation that spans more than one
    provider: a blind copy to the destination root cannot be right for nested trees."""

    def __init__(self, instance_uuid: str, provider_uuids: list[str]) -> None:
        super().__init__(
            f"instance {instance_uuid} holds allocations on {len(provider_uuids)} providers "
            f"({', '.join(provider_uuids)}); a forced move can only copy a single-provider "
            "allocation: schedule the move instead",
            instance_uuid=instance_uuid,
            provider_uuids=provider_uuids,
        )


class InvalidTransition(LedgerError):
    """Raised when a migration command does not fit the migration's status or kind."""

    def __init__(self, migration_uuid: str, status: str, action: str) -> None:
        super().__init__(
            f"cannot {action} migration {migration_uuid}: it is {status}",
            migration_uuid=migration_uuid,
            status=status,
            action=action,
        )


class MigrationInProgress(LedgerError):
    """Raised when starting a move for an instance that is already mid-move."""

    def __init__(self, instance_uuid: str, migration_uuid: str) -> None:
        super().__init__(
            f"instance {instance_uuid} is already moving (migration {migration_uuid})",
            instance_uuid=instance_uuid,
            migration_uuid=migration_uuid,
        )


class StoreNotFound(LedgerError):
    """Raised when a read names a store that holds no ledger (a missing file, a database
    or schema without the ledger's tables): reads never create one."""

    def __init__(self, url: str, reason: str, what: str = "ledger") -> None:
        super().__init__(f"no {what} at {url}: {reason}", url=url, reason=reason)


class StoreUnavailable(LedgerError):
    """Raised when the store cannot be opened or reached (server down, bad host or user,
    a file that is not a database or cannot be read)."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"cannot use the store {url}: {reason}", url=url, reason=reason)


class StoreUnusable(LedgerError):
    """Raised when the store cannot be used as it is: a corrupt file, a schema without the
    hash chain (an old ledger not yet migrated), or a chain key that is not the ledger's."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message, **fields)


class CommandIdReused(LedgerError):
    """Raised when a command id that already names an applied command comes with another
    command (another kind, or other arguments). Nothing is written."""

    def __init__(self, command_id: str, recorded: str, recorded_fingerprint: str,
                 given: str, given_fingerprint: str) -> None:
        super().__init__(
            f"command id {command_id!r} was already used for {recorded} (arguments "
            f"{recorded_fingerprint[:12]}); it cannot name {given} (arguments "
            f"{given_fingerprint[:12]}): choose a new command id",
            command_id=command_id,
            recorded=recorded,
            recorded_fingerprint=recorded_fingerprint,
            given=given,
            given_fingerprint=given_fingerprint,
        )


class StoreLost(StoreUnavailable):
    """Raised when a command or a read lost the store (connection lost, server down or
    restarting) before the command was sent: it was not applied. Retry with the same
    command id."""

    outcome_known = True

    def __init__(self, command_id: str | None, reason: str, message: str | None = None
                 ) -> None:
        default = (f"the store is unavailable ({reason}); command {command_id!r} was not "
                   "applied: retry with the same command id" if command_id else
                   f"the store is unavailable ({reason}); retry the read")
        LedgerError.__init__(
            self, message or default,
            command_id=command_id,
            reason=reason,
            outcome_known=type(self).outcome_known,
        )


class OutcomeUnknown(StoreLost):
    """Raised when the connection to the store failed while a command's append was under way
    and the store could not be asked afterwards whether it committed. The command may or
    may not have been applied: retry with the same command id (applied at most once), or
    look it up with ``Ledger.command``."""

    outcome_known = False

    def __init__(self, command_id: str | None, reason: str) -> None:
        super().__init__(
            command_id, reason,
            f"the store was lost during command {command_id!r} ({reason}): its outcome is "
            "unknown; retry with the same command id (it is applied at most once) or look "
            "it up with `allocation-ledger command ID`",
        )
