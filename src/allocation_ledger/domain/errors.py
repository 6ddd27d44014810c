"""The ledger's errors: one hierarchy under :class:`LedgerError`.

Every error carries structured fields (ids, resource class, numbers, generations) as typed
attributes (``err.free``, ``err.expected``), listed in ``err.fields``, and a message a person
can act on. A command that raises one of these has written nothing.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar


class LedgerError(Exception):
    """Base class of every error the ledger raises on purpose.

    A subclass is declared, not written: its annotated attributes are its fields (after
    those it inherits), in order, and ``MESSAGE`` formats them into its message. It is
    raised with the fields as arguments, in that order or by name; a field with a value in
    the class body may be left out (a message that needs more than a format overrides
    ``_message``). A class with neither takes its message first;
    extra keyword arguments (for errors without a class of their own) land in ``fields`` as
    they are. Errors pickle from their fields (they cross process boundaries: pools,
    racing workers).
    """

    FIELDS: ClassVar[tuple[str, ...]] = ()
    #: the message, formatted with the fields ("": the message is the first argument)
    MESSAGE: ClassVar[str] = ""
    message: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "FIELDS" not in cls.__dict__:
            own = [name for name, kind in inspect.get_annotations(cls).items()
                   if "ClassVar" not in str(kind) and name not in cls.FIELDS]
            cls.FIELDS = (*cls.FIELDS, *own)

    def __init__(self, *args: Any, **extra: Any) -> None:
        values = list(args)
        formats = bool(self.MESSAGE) or type(self)._message is not LedgerError._message
        message = "" if formats else values.pop(0)
        if len(values) > len(self.FIELDS):
            raise TypeError(f"{type(self).__name__} takes {len(self.FIELDS)} fields, "
                            f"got {len(values)}")
        for name, value in zip(self.FIELDS, values, strict=False):
            setattr(self, name, value)
        for name in self.FIELDS[len(values):]:
            if name in extra:
                setattr(self, name, extra.pop(name))
            elif not hasattr(self, name):  # set before, or a default in the class body
                raise TypeError(f"{type(self).__name__} needs {name!r}")
        self._extra = extra
        self.message = message = self._message() if formats else message
        super().__init__(message)

    def _message(self) -> str:
        return self.MESSAGE.format(**self.fields)

    @property
    def fields(self) -> dict[str, Any]:
        """The error's structured fields, by name."""
        return {**{name: getattr(self, name) for name in self.FIELDS}, **self._extra}

    def to_dict(self) -> dict[str, Any]:
        """The error as plain data: its kind, message and fields."""
        return {"error": type(self).__name__, "message": self.message, **self.fields}

    def __reduce__(self) -> tuple[Any, ...]:
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

    provider_uuid: str
    resource_class: str
    reason: str
    MESSAGE = "invalid inventory for {resource_class} on provider {provider_uuid}: {reason}"


class InvalidAllocation(InvalidRequest):
    """Raised when an allocation amount breaks the min_unit, max_unit or step_size rule."""

    consumer_uuid: str
    provider_uuid: str
    resource_class: str
    amount: int
    reason: str
    MESSAGE = ("allocation of {amount} {resource_class} on provider {provider_uuid} for "
               "consumer {consumer_uuid} is invalid: {reason}")


class NotFound(LedgerError):
    """Base class for a named thing that does not exist."""


class ProviderNotFound(NotFound):
    """Raised when a command names a provider that was never registered or was deleted."""

    provider_uuid: str
    MESSAGE = "provider {provider_uuid} does not exist"


class MigrationNotFound(NotFound):
    """Raised when a command names a migration that does not exist."""

    migration_uuid: str
    MESSAGE = "migration {migration_uuid} does not exist"


class ConsumerNotFound(NotFound):
    """Raised when a command or read names a consumer that was never written."""

    consumer_uuid: str
    MESSAGE = "consumer {consumer_uuid} does not exist"


class ConsumerHoldsNothing(ConsumerNotFound):
    """Raised when a command needs a consumer's allocations (a move) and the consumer holds
    none (never written, or emptied). A :class:`ConsumerNotFound`, so callers that catch
    that still catch it."""

    MESSAGE = "consumer {consumer_uuid} holds no allocations"


class UnknownPrefix(NotFound):
    """Raised when no provider, consumer or migration starts with the prefix given."""

    kind: str
    prefix: str

    def _message(self) -> str:
        return f"no {self.kind} starts with {self.prefix!r}"


class ResourceClassNotFound(NotFound):
    """Raised when a command names a custom resource class that was never created or was
    deleted."""

    resource_class: str
    MESSAGE = "No such resource class {resource_class}."


class ResourceClassExists(LedgerError):
    """Raised when creating a custom resource class that already exists."""

    resource_class: str
    MESSAGE = "Resource class {resource_class} already exists."


class ProviderExists(LedgerError):
    """Raised when registering a provider whose UUID a live provider has."""

    provider_uuid: str
    MESSAGE = "provider {provider_uuid} already exists"


class ProviderNameTaken(LedgerError):
    """Raised when registering or renaming a provider to a name another provider holds."""

    name: str
    provider_uuid: str
    MESSAGE = ("Conflicting resource provider name: {name} already exists (provider "
               "{provider_uuid})")


class ProviderInUse(LedgerError):
    """Raised when deleting a provider that still has allocations or children."""

    provider_uuid: str
    reason: str
    MESSAGE = "provider {provider_uuid} cannot be deleted: {reason}"


class ProviderHasChildren(ProviderInUse):
    """Raised when deleting a provider that still has child providers."""

    children: list[str]

    def __init__(self, provider_uuid: str, children: list[str]) -> None:
        super().__init__(provider_uuid, f"it has children {', '.join(children)}", children)


class InventoryInUse(LedgerError):
    """Raised when removing a resource class that still has allocations against it."""

    provider_uuid: str
    resource_class: str
    used: int
    MESSAGE = ("cannot remove {resource_class} from provider {provider_uuid}: {used} still "
               "allocated")


class ResourceClassNotOnProvider(LedgerError):
    """Raised when allocating a resource class the provider has no inventory for."""

    provider_uuid: str
    resource_class: str
    MESSAGE = "provider {provider_uuid} has no inventory of {resource_class}"


class InsufficientCapacity(LedgerError):
    """Raised when a write would push a provider's usage of a class above its capacity."""

    provider_uuid: str
    resource_class: str
    requested: int
    used: int
    capacity: int
    free: int
    MESSAGE = ("provider {provider_uuid} cannot fit {requested} more {resource_class}: "
               "{used} used of capacity {capacity}, {free} free")

    def __init__(self, provider_uuid: str, resource_class: str, requested: int, used: int,
                 capacity: int) -> None:
        super().__init__(provider_uuid, resource_class, requested, used, capacity,
                         max(capacity - used, 0))


class DevicesUnavailable(LedgerError):
    """Raised when a claim needs more free devices of a class than a provider has, or names
    devices that are missing or held by someone else."""

    provider_uuid: str
    resource_class: str
    needed: int
    free: int
    detail: str = ""
    MESSAGE = ("provider {provider_uuid} has {free} free {resource_class} devices, {needed} "
               "needed{extra}")

    def _message(self) -> str:
        return self.MESSAGE.format(**self.fields,
                                   extra=f" ({self.detail})" if self.detail else "")


class DeviceInUse(LedgerError):
    """Raised when removing a device that a consumer holds, or declaring devices on a class
    that already has allocations."""

    provider_uuid: str
    resource_class: str
    reason: str
    MESSAGE = "devices of {resource_class} on provider {provider_uuid}: {reason}"


class Conflict(LedgerError):
    """Base class for optimistic-concurrency conflicts: re-read, re-decide, try again."""


class ConsumerGenerationConflict(Conflict):
    """Raised when a consumer's generation is not the one the caller expected.

    ``expected`` and ``actual`` are ``None`` for a consumer that holds no allocations.
    Never retried inside the ledger: the caller re-reads and decides again.
    """

    consumer_uuid: str
    expected: int | None
    actual: int | None
    MESSAGE = "consumer {consumer_uuid} generation conflict: expected {expected}, actual {actual}"


class ProviderGenerationConflict(Conflict):
    """Raised when a provider's generation is not the one an inventory change expected."""

    provider_uuid: str
    expected: int
    actual: int
    MESSAGE = "provider {provider_uuid} generation conflict: expected {expected}, actual {actual}"


class ConcurrentUpdate(Conflict):
    """Raised when provider streams kept changing under a write until its retries ran out."""

    provider_uuids: list[str]
    attempts: int

    def _message(self) -> str:
        return (f"providers {', '.join(self.provider_uuids)} kept changing concurrently; "
                f"gave up after {self.attempts} attempts")


class NestedAllocationMove(LedgerError):
    """Raised when a forced move is asked for an allocation that spans more than one
    provider: a blind copy to the destination root cannot be right for nested trees."""

    instance_uuid: str
    provider_uuids: list[str]

    def _message(self) -> str:
        return (f"instance {self.instance_uuid} holds allocations on "
                f"{len(self.provider_uuids)} providers ({', '.join(self.provider_uuids)}); "
                "a forced move can only copy a single-provider allocation: schedule the "
                "move instead")


class InvalidTransition(LedgerError):
    """Raised when a migration command does not fit the migration's status or kind."""

    migration_uuid: str
    status: str
    action: str
    MESSAGE = "cannot {action} migration {migration_uuid}: it is {status}"


class MigrationInProgress(LedgerError):
    """Raised when starting a move for an instance that is already mid-move."""

    instance_uuid: str
    migration_uuid: str
    MESSAGE = "instance {instance_uuid} is already moving (migration {migration_uuid})"


class StoreNotFound(LedgerError):
    """Raised when a read names a store that holds no ledger (a missing file, a database
    or schema without the ledger's tables): reads never create one."""

    url: str
    reason: str

    def __init__(self, url: str, reason: str, what: str = "ledger") -> None:
        super().__init__(f"no {what} at {url}: {reason}", url, reason)


class StoreUnavailable(LedgerError):
    """Raised when the store cannot be opened or reached (server down, bad host or user,
    a file that is not a database or cannot be read)."""

    url: str
    reason: str
    MESSAGE = "cannot use the store {url}: {reason}"


class StoreUnusable(LedgerError):
    """Raised when the store cannot be used as it is: a corrupt file, a schema without the
    hash chain (an old ledger not yet migrated), or a chain key that is not the ledger's.
    What it names varies (a path, a key's length, a position): those land in ``fields``."""


class LedgerNotEmpty(LedgerError):
    """Raised when an operation that must start a ledger (an import from Placement) finds
    one that already holds events: it writes nothing."""

    position: int


class ReadModelsDiverged(LedgerError):
    """Raised when the read models followed a history the ledger no longer has (it was
    restored from an older copy, truncated or rewritten): they must be rebuilt."""

    position: int
    projection: str | None = None


class CommandIdReused(LedgerError):
    """Raised when a command id that already names an applied command comes with another
    command (another kind, or other arguments). Nothing is written."""

    command_id: str
    recorded: str
    recorded_fingerprint: str
    given: str
    given_fingerprint: str

    def _message(self) -> str:
        return (f"command id {self.command_id!r} was already used for {self.recorded} "
                f"(arguments {self.recorded_fingerprint[:12]}); it cannot name {self.given} "
                f"(arguments {self.given_fingerprint[:12]}): choose a new command id")


class StoreLost(StoreUnavailable):
    """Raised when a command or a read lost the store (connection lost, server down or
    restarting) before the command was sent: it was not applied. Retry with the same
    command id."""

    FIELDS = ("command_id", "reason", "outcome_known")
    command_id: str | None
    outcome_known: bool
    url = ""

    def __init__(self, command_id: str | None, reason: str) -> None:
        super().__init__(command_id, reason, type(self) is StoreLost)

    def _message(self) -> str:
        if self.command_id:
            return (f"the store is unavailable ({self.reason}); command "
                    f"{self.command_id!r} was not applied: retry with the same command id")
        return f"the store is unavailable ({self.reason}); retry the read"


class OutcomeUnknown(StoreLost):
    """Raised when the connection to the store failed while a command's append was under way
    and the store could not be asked afterwards whether it committed. The command may or
    may not have been applied: retry with the same command id (applied at most once), or
    look it up with ``Ledger.command``."""

    def _message(self) -> str:
        return (f"the store was lost during command {self.command_id!r} ({self.reason}): "
                "its outcome is unknown; retry with the same command id (it is applied at "
                "most once) or look it up with `allocation-ledger command ID`")


class UnreadableEvent(LedgerError):
    """Raised when a reader that must apply every event (the read models) meets a stored
    event it cannot read as one: bytes that are not its JSON, or a field its class needs
    missing (written past the service's checks). It stops there; the audit reports the
    event as ``unreadable-event`` at the same position."""

    position: int
    stream: str
    topic: str
    reason: str
    MESSAGE = ("the event at #{position} (stream {stream}, {topic}) cannot be read: {reason}; "
               "the read models stop before #{position} (`allocation-ledger audit` reports "
               "every such event)")


class TraitNotFound(NotFound):
    """Raised when a trait is named that is neither standard nor a custom one that exists."""

    names: list[str]

    def _message(self) -> str:
        return f"No such trait(s): {', '.join(self.names)}."


class UnknownTraits(InvalidRequest):
    """Raised when a provider's new traits name traits that do not exist (create a custom
    trait before giving it to a provider)."""

    provider_uuid: str
    names: list[str]

    def _message(self) -> str:
        return (f"No such trait {', '.join(self.names)} (provider {self.provider_uuid}): "
                "create a custom trait before a provider takes it")


class StandardTrait(InvalidRequest):
    """Raised when a standard trait (one of os-traits') is to be deleted."""

    name: str
    MESSAGE = "Cannot delete standard trait {name}."


class TraitInUse(LedgerError):
    """Raised when a custom trait is to be deleted while providers have it."""

    name: str
    provider_uuids: list[str]

    def _message(self) -> str:
        uuids = self.provider_uuids
        shown = ", ".join(uuids[:5]) + (", ..." if len(uuids) > 5 else "")
        return (f"The trait {self.name} is in use by a resource provider. "
                f"({len(uuids)}: {shown})")
