"""The ledger's errors: one hierarchy under :class:`LedgerError`.

Every error carries structured fields (ids, resource class, numbers, generations) as typed
attributes (``err.free``, ``err.expected``), listed in ``err.fields``, and a message a person
can act on. A command that raises one of these has written nothing.
"""

from __future__ import annotations

from typing import Any, ClassVar


class LedgerError(Exception):
    """Base class of every error the ledger raises on purpose.

    Subclasses declare their fields as annotated attributes, name them in ``FIELDS`` and
    assign them before calling ``super().__init__(message)``; extra keyword arguments (for
    errors without a class of their own) land in ``fields`` as they are.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ()
    message: str

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self._extra = extra

    @property
    def fields(self) -> dict[str, Any]:
        """The error's structured fields, by name."""
        return {**{name: getattr(self, name) for name in self.FIELDS}, **self._extra}

    def to_dict(self) -> dict[str, Any]:
        """The error as plain data: its kind, message and fields."""
        return {"error": type(self).__name__, "message": self.message, **self.fields}

    def __reduce__(self) -> tuple[Any, ...]:
        # errors cross process boundaries (pools, racing workers): rebuild from the fields
        return (_rebuild, (type(self), self.message, self.fields))


def _rebuild(cls: type[LedgerError], message: str, fields: dict[str, Any]) -> LedgerError:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.message = message
    declared = {name: fields[name] for name in cls.FIELDS if name in fields}
    err.__dict__.update(declared)
    err._extra = {k: v for k, v in fields.items() if k not in declared}
    return err


class InvalidRequest(LedgerError):
    """Raised when a command's input is malformed: bad ids, names, amounts or shapes."""


class InvalidInventory(InvalidRequest):
    """Raised when an inventory record breaks Placement's validation rules."""

    FIELDS = ("provider_uuid", "resource_class", "reason")
    provider_uuid: str
    resource_class: str
    reason: str

    def __init__(self, provider_uuid: str, resource_class: str, reason: str) -> None:
        self.provider_uuid, self.resource_class, self.reason = (
            provider_uuid, resource_class, reason)
        super().__init__(
            f"invalid inventory for {resource_class} on provider {provider_uuid}: {reason}")


class InvalidAllocation(InvalidRequest):
    """Raised when an allocation amount breaks the min_unit, max_unit or step_size rule."""

    FIELDS = ("consumer_uuid", "provider_uuid", "resource_class", "amount", "reason")
    consumer_uuid: str
    provider_uuid: str
    resource_class: str
    amount: int
    reason: str

    def __init__(
        self, consumer_uuid: str, provider_uuid: str, resource_class: str, amount: int, reason: str
    ) -> None:
        self.consumer_uuid, self.provider_uuid = consumer_uuid, provider_uuid
        self.resource_class, self.amount, self.reason = resource_class, amount, reason
        super().__init__(
            f"allocation of {amount} {resource_class} on provider {provider_uuid} for consumer "
            f"{consumer_uuid} is invalid: {reason}")


class NotFound(LedgerError):
    """Base class for a named thing that does not exist."""


class ProviderNotFound(NotFound):
    """Raised when a command names a provider that was never registered or was deleted."""

    FIELDS = ("provider_uuid",)
    provider_uuid: str

    def __init__(self, provider_uuid: str) -> None:
        self.provider_uuid = provider_uuid
        super().__init__(f"provider {provider_uuid} does not exist")


class MigrationNotFound(NotFound):
    """Raised when a command names a migration that does not exist."""

    FIELDS = ("migration_uuid",)
    migration_uuid: str

    def __init__(self, migration_uuid: str) -> None:
        self.migration_uuid = migration_uuid
        super().__init__(f"migration {migration_uuid} does not exist")


class ConsumerNotFound(NotFound):
    """Raised when a command or read names a consumer that was never written."""

    FIELDS = ("consumer_uuid",)
    consumer_uuid: str

    def __init__(self, consumer_uuid: str, message: str | None = None) -> None:
        self.consumer_uuid = consumer_uuid
        super().__init__(message or f"consumer {consumer_uuid} does not exist")


class ConsumerHoldsNothing(ConsumerNotFound):
    """Raised when a command needs a consumer's allocations (a move) and the consumer holds
    none (never written, or emptied). A :class:`ConsumerNotFound`, so callers that catch
    that still catch it."""

    def __init__(self, consumer_uuid: str) -> None:
        super().__init__(consumer_uuid, f"consumer {consumer_uuid} holds no allocations")


class UnknownPrefix(NotFound):
    """Raised when no provider, consumer or migration starts with the prefix given."""

    FIELDS = ("kind", "prefix")
    kind: str
    prefix: str

    def __init__(self, kind: str, prefix: str) -> None:
        self.kind, self.prefix = kind, prefix
        super().__init__(f"no {kind} starts with {prefix!r}")


class ResourceClassNotFound(NotFound):
    """Raised when a command names a custom resource class that was never created or was
    deleted."""

    FIELDS = ("resource_class",)
    resource_class: str

    def __init__(self, resource_class: str) -> None:
        self.resource_class = resource_class
        super().__init__(f"No such resource class {resource_class}.")


class ResourceClassExists(LedgerError):
    """Raised when creating a custom resource class that already exists."""

    FIELDS = ("resource_class",)
    resource_class: str

    def __init__(self, resource_class: str) -> None:
        self.resource_class = resource_class
        super().__init__(f"Resource class {resource_class} already exists.")


class ProviderExists(LedgerError):
    """Raised when registering a provider whose UUID a live provider has."""

    FIELDS = ("provider_uuid",)
    provider_uuid: str

    def __init__(self, provider_uuid: str) -> None:
        self.provider_uuid = provider_uuid
        super().__init__(
            f"provider {provider_uuid} already exists")


class ProviderNameTaken(LedgerError):
    """Raised when registering or renaming a provider to a name another provider holds."""

    FIELDS = ("name", "provider_uuid")
    name: str
    provider_uuid: str

    def __init__(self, name: str, provider_uuid: str) -> None:
        self.name, self.provider_uuid = name, provider_uuid
        super().__init__(
            f"Conflicting resource provider name: {name} already exists (provider "
            f"{provider_uuid})")


class ProviderInUse(LedgerError):
    """Raised when deleting a provider that still has allocations or children."""

    FIELDS: ClassVar[tuple[str, ...]] = ("provider_uuid", "reason")
    provider_uuid: str
    reason: str

    def __init__(self, provider_uuid: str, reason: str) -> None:
        self.provider_uuid, self.reason = provider_uuid, reason
        super().__init__(f"provider {provider_uuid} cannot be deleted: {reason}")


class ProviderHasChildren(ProviderInUse):
    """Raised when deleting a provider that still has child providers."""

    FIELDS = ("provider_uuid", "reason", "children")
    children: list[str]

    def __init__(self, provider_uuid: str, children: list[str]) -> None:
        self.children = children
        super().__init__(provider_uuid, f"it has children {', '.join(children)}")


class InventoryInUse(LedgerError):
    """Raised when removing a resource class that still has allocations against it."""

    FIELDS = ("provider_uuid", "resource_class", "used")
    provider_uuid: str
    resource_class: str
    used: int

    def __init__(self, provider_uuid: str, resource_class: str, used: int) -> None:
        self.provider_uuid, self.resource_class, self.used = provider_uuid, resource_class, used
        super().__init__(
            f"cannot remove {resource_class} from provider {provider_uuid}: {used} still "
            "allocated")


class ResourceClassNotOnProvider(LedgerError):
    """Raised when allocating a resource class the provider has no inventory for."""

    FIELDS = ("provider_uuid", "resource_class")
    provider_uuid: str
    resource_class: str

    def __init__(self, provider_uuid: str, resource_class: str) -> None:
        self.provider_uuid, self.resource_class = provider_uuid, resource_class
        super().__init__(f"provider {provider_uuid} has no inventory of {resource_class}")


class InsufficientCapacity(LedgerError):
    """Raised when a write would push a provider's usage of a class above its capacity."""

    FIELDS = ("provider_uuid", "resource_class", "requested", "used", "capacity", "free")
    provider_uuid: str
    resource_class: str
    requested: int
    used: int
    capacity: int
    free: int

    def __init__(
        self,
        provider_uuid: str,
        resource_class: str,
        requested: int,
        used: int,
        capacity: int,
    ) -> None:
        self.provider_uuid, self.resource_class = provider_uuid, resource_class
        self.requested, self.used, self.capacity = requested, used, capacity
        self.free = max(capacity - used, 0)
        super().__init__(
            f"provider {provider_uuid} cannot fit {requested} more {resource_class}: "
            f"{used} used of capacity {capacity}, {self.free} free")


class DevicesUnavailable(LedgerError):
    """Raised when a claim needs more free devices of a class than a provider has, or names
    devices that are missing or held by someone else."""

    FIELDS = ("provider_uuid", "resource_class", "needed", "free", "detail")
    provider_uuid: str
    resource_class: str
    needed: int
    free: int
    detail: str

    def __init__(
        self, provider_uuid: str, resource_class: str, needed: int, free: int, detail: str = ""
    ) -> None:
        self.provider_uuid, self.resource_class = provider_uuid, resource_class
        self.needed, self.free, self.detail = needed, free, detail
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"provider {provider_uuid} has {free} free {resource_class} devices, {needed} "
            f"needed{extra}")


class DeviceInUse(LedgerError):
    """Raised when removing a device that a consumer holds, or declaring devices on a class
    that already has allocations."""

    FIELDS = ("provider_uuid", "resource_class", "reason")
    provider_uuid: str
    resource_class: str
    reason: str

    def __init__(self, provider_uuid: str, resource_class: str, reason: str) -> None:
        self.provider_uuid, self.resource_class, self.reason = (
            provider_uuid, resource_class, reason)
        super().__init__(f"devices of {resource_class} on provider {provider_uuid}: {reason}")


class Conflict(LedgerError):
    """Base class for optimistic-concurrency conflicts: re-read, re-decide, try again."""


class ConsumerGenerationConflict(Conflict):
    """Raised when a consumer's generation is not the one the caller expected.

    ``expected`` and ``actual`` are ``None`` for a consumer that holds no allocations.
    Never retried inside the ledger: the caller re-reads and decides again.
    """

    FIELDS = ("consumer_uuid", "expected", "actual")
    consumer_uuid: str
    expected: int | None
    actual: int | None

    def __init__(self, consumer_uuid: str, expected: int | None, actual: int | None) -> None:
        self.consumer_uuid, self.expected, self.actual = consumer_uuid, expected, actual
        super().__init__(
            f"consumer {consumer_uuid} generation conflict: expected {expected}, "
            f"actual {actual}")


class ProviderGenerationConflict(Conflict):
    """Raised when a provider's generation is not the one an inventory change expected."""

    FIELDS = ("provider_uuid", "expected", "actual")
    provider_uuid: str
    expected: int
    actual: int

    def __init__(self, provider_uuid: str, expected: int, actual: int) -> None:
        self.provider_uuid, self.expected, self.actual = provider_uuid, expected, actual
        super().__init__(
            f"provider {provider_uuid} generation conflict: expected {expected}, "
            f"actual {actual}")


class ConcurrentUpdate(Conflict):
    """Raised when provider streams kept changing under a write until its retries ran out."""

    FIELDS = ("provider_uuids", "attempts")
    provider_uuids: list[str]
    attempts: int

    def __init__(self, provider_uuids: list[str], attempts: int) -> None:
        self.provider_uuids, self.attempts = provider_uuids, attempts
        super().__init__(
            f"providers {', '.join(provider_uuids)} kept changing concurrently; gave up after "
            f"{attempts} attempts")


class NestedAllocationMove(LedgerError):
    """Raised when a forced move is asked for an allocation that spans more than one
    provider: a blind copy to the destination root cannot be right for nested trees."""

    FIELDS = ("instance_uuid", "provider_uuids")
    instance_uuid: str
    provider_uuids: list[str]

    def __init__(self, instance_uuid: str, provider_uuids: list[str]) -> None:
        self.instance_uuid, self.provider_uuids = instance_uuid, provider_uuids
        super().__init__(
            f"instance {instance_uuid} holds allocations on {len(provider_uuids)} providers "
            f"({', '.join(provider_uuids)}); a forced move can only copy a single-provider "
            "allocation: schedule the move instead")


class InvalidTransition(LedgerError):
    """Raised when a migration command does not fit the migration's status or kind."""

    FIELDS = ("migration_uuid", "status", "action")
    migration_uuid: str
    status: str
    action: str

    def __init__(self, migration_uuid: str, status: str, action: str) -> None:
        self.migration_uuid, self.status, self.action = migration_uuid, status, action
        super().__init__(f"cannot {action} migration {migration_uuid}: it is {status}")


class MigrationInProgress(LedgerError):
    """Raised when starting a move for an instance that is already mid-move."""

    FIELDS = ("instance_uuid", "migration_uuid")
    instance_uuid: str
    migration_uuid: str

    def __init__(self, instance_uuid: str, migration_uuid: str) -> None:
        self.instance_uuid, self.migration_uuid = instance_uuid, migration_uuid
        super().__init__(
            f"instance {instance_uuid} is already moving (migration {migration_uuid})")


class StoreNotFound(LedgerError):
    """Raised when a read names a store that holds no ledger (a missing file, a database
    or schema without the ledger's tables): reads never create one."""

    FIELDS = ("url", "reason")
    url: str
    reason: str

    def __init__(self, url: str, reason: str, what: str = "ledger") -> None:
        self.url, self.reason = url, reason
        super().__init__(f"no {what} at {url}: {reason}")


class StoreUnavailable(LedgerError):
    """Raised when the store cannot be opened or reached (server down, bad host or user,
    a file that is not a database or cannot be read)."""

    FIELDS: ClassVar[tuple[str, ...]] = ("url", "reason")
    url: str
    reason: str

    def __init__(self, url: str, reason: str) -> None:
        self.url, self.reason = url, reason
        super().__init__(f"cannot use the store {url}: {reason}")


class StoreUnusable(LedgerError):
    """Raised when the store cannot be used as it is: a corrupt file, a schema without the
    hash chain (an old ledger not yet migrated), or a chain key that is not the ledger's.
    What it names varies (a path, a key's length, a position): those land in ``fields``."""


class LedgerNotEmpty(LedgerError):
    """Raised when an operation that must start a ledger (an import from Placement) finds
    one that already holds events: it writes nothing."""

    FIELDS = ("position",)
    position: int

    def __init__(self, message: str, position: int) -> None:
        self.position = position
        super().__init__(message)


class ReadModelsDiverged(LedgerError):
    """Raised when the read models followed a history the ledger no longer has (it was
    restored from an older copy, truncated or rewritten): they must be rebuilt."""

    FIELDS = ("position", "projection")
    position: int
    projection: str | None

    def __init__(self, message: str, position: int, projection: str | None = None) -> None:
        self.position, self.projection = position, projection
        super().__init__(message)


class CommandIdReused(LedgerError):
    """Raised when a command id that already names an applied command comes with another
    command (another kind, or other arguments). Nothing is written."""

    FIELDS = ("command_id", "recorded", "recorded_fingerprint", "given", "given_fingerprint")
    command_id: str
    recorded: str
    recorded_fingerprint: str
    given: str
    given_fingerprint: str

    def __init__(self, command_id: str, recorded: str, recorded_fingerprint: str,
                 given: str, given_fingerprint: str) -> None:
        self.command_id, self.recorded, self.recorded_fingerprint = (
            command_id, recorded, recorded_fingerprint)
        self.given, self.given_fingerprint = given, given_fingerprint
        super().__init__(
            f"command id {command_id!r} was already used for {recorded} (arguments "
            f"{recorded_fingerprint[:12]}); it cannot name {given} (arguments "
            f"{given_fingerprint[:12]}): choose a new command id")


class StoreLost(StoreUnavailable):
    """Raised when a command or a read lost the store (connection lost, server down or
    restarting) before the command was sent: it was not applied. Retry with the same
    command id."""

    FIELDS = ("command_id", "reason", "outcome_known")
    command_id: str | None
    outcome_known: bool

    def __init__(self, command_id: str | None, reason: str, message: str | None = None
                 ) -> None:
        default = (f"the store is unavailable ({reason}); command {command_id!r} was not "
                   "applied: retry with the same command id" if command_id else
                   f"the store is unavailable ({reason}); retry the read")
        self.command_id, self.reason = command_id, reason
        self.outcome_known = type(self) is StoreLost
        self.url = ""
        LedgerError.__init__(self, message or default)


class OutcomeUnknown(StoreLost):
    """Raised when the connection to the store failed while a command's append was under way
    and the store could not be asked afterwards whether it committed. The command may or
    may not have been applied: retry with the same command id (applied at most once), or
    look it up with ``Ledger.command``."""

    def __init__(self, command_id: str | None, reason: str) -> None:
        super().__init__(
            command_id, reason,
            f"the store was lost during command {command_id!r} ({reason}): its outcome is "
            "unknown; retry with the same command id (it is applied at most once) or look "
            "it up with `allocation-ledger command ID`",
        )


class UnreadableEvent(LedgerError):
    """Raised when a reader that must apply every event (the read models) meets a stored
    event it cannot read as one: bytes that are not its JSON, or a field its class needs
    missing (written past the service's checks). It stops there; the audit reports the
    event as ``unreadable-event`` at the same position."""

    FIELDS = ("position", "stream", "topic", "reason")
    position: int
    stream: str
    topic: str
    reason: str

    def __init__(self, position: int, stream: str, topic: str, reason: str) -> None:
        self.position, self.stream, self.topic, self.reason = position, stream, topic, reason
        super().__init__(
            f"the event at #{position} (stream {stream}, {topic}) cannot be read: {reason}; "
            f"the read models stop before #{position} (`allocation-ledger audit` reports "
            "every such event)")


class TraitNotFound(NotFound):
    """Raised when a trait is named that is neither standard nor a custom one that exists."""

    FIELDS = ("names",)
    names: list[str]

    def __init__(self, names: list[str]) -> None:
        self.names = names
        super().__init__(f"No such trait(s): {', '.join(names)}.")


class UnknownTraits(InvalidRequest):
    """Raised when a provider's new traits name traits that do not exist (create a custom
    trait before giving it to a provider)."""

    FIELDS = ("provider_uuid", "names")
    provider_uuid: str
    names: list[str]

    def __init__(self, provider_uuid: str, names: list[str]) -> None:
        self.provider_uuid, self.names = provider_uuid, names
        super().__init__(f"No such trait {', '.join(names)} (provider {provider_uuid}): "
                         "create a custom trait before a provider takes it")


class StandardTrait(InvalidRequest):
    """Raised when a standard trait (one of os-traits') is to be deleted."""

    FIELDS = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"Cannot delete standard trait {name}.")


class TraitInUse(LedgerError):
    """Raised when a custom trait is to be deleted while providers have it."""

    FIELDS = ("name", "provider_uuids")
    name: str
    provider_uuids: list[str]

    def __init__(self, name: str, provider_uuids: list[str]) -> None:
        self.name, self.provider_uuids = name, provider_uuids
        shown = ", ".join(provider_uuids[:5]) + (", ..." if len(provider_uuids) > 5 else "")
        super().__init__(f"The trait {name} is in use by a resource provider. "
                         f"({len(provider_uuids)}: {shown})")
