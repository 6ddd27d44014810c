"""Command inputs, validated at the boundary with pydantic before anything is written.

Ids are UUIDs (returned in canonical lower-case form), resource classes are standard or
``CUSTOM_*`` names (the whole string: no trailing newline), amounts and generations are
strict integers (no ``bool``, no ``"1"``), and every piece of text the ledger stores (names,
project and user ids, device ids, request fields, consumer types) is a ``str`` of bounded
length with no control character (so no NUL, which PostgreSQL text cannot hold) and no lone
surrogate (which UTF-8 cannot encode). A bad input raises
:class:`~allocation_ledger.domain.errors.InvalidRequest` listing every problem found, by
field and value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Annotated, Any, TypeVar
from uuid import UUID, uuid4

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
)

from allocation_ledger.domain.consumer import INSTANCE, UNKNOWN
from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.domain.values import MAX_INT, RequestMeta, is_valid_resource_class

_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: C0 and C1 control characters (NUL among them): never in text the ledger stores.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: Free text (a request's reason) may span lines and hold tabs; nothing else.
_CONTROL_IN_FREE_TEXT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: The most device ids one ``set_devices`` call may declare (the event holds them all).
MAX_DEVICE_IDS = 100_000
#: The largest generation or stream version any store can hold (a signed 64-bit integer).
MAX_VERSION = 2**63 - 1


def _uuid(value: object) -> str:
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, str) and _CANONICAL_UUID.fullmatch(value):
        return value  # already what str(UUID(value)) gives
    if not isinstance(value, str):
        raise ValueError(f"expected a UUID, got {value!r}")
    try:
        return str(UUID(value))
    except ValueError:
        raise ValueError(f"malformed UUID {value!r}") from None


def _refuse_control(pattern: re.Pattern[str]) -> AfterValidator:
    def check(value: str) -> str:
        found = pattern.search(value)
        if found:
            raise ValueError(f"control character U+{ord(found.group()):04X} at index "
                             f"{found.start()} of {value[:80]!r}: the ledger stores no "
                             "control characters")
        return value

    return AfterValidator(check)


#: The one rule for text the ledger stores: a ``str`` (strictly: no bytes, no numbers), of
#: bounded length, with no control character and no lone surrogate (pydantic's own string
#: check refuses those). Free text (a request's reason) may hold newlines and tabs.
NoControl = _refuse_control(_CONTROL)
NoControlFreeText = _refuse_control(_CONTROL_IN_FREE_TEXT)
Name = Annotated[str, Strict(), Field(min_length=1, max_length=255), NoControl]
ShortText = Annotated[str, Strict(), Field(max_length=255), NoControl]
FreeText = Annotated[str, Strict(), Field(max_length=4096), NoControlFreeText]


def _resource_class(value: str) -> str:
    if not is_valid_resource_class(value):
        raise ValueError(
            f"unknown resource class {value!r}: use a standard class or CUSTOM_[A-Z0-9_]+"
        )
    return value


def _consumer_type(value: str) -> str:
    if value != UNKNOWN and not re.fullmatch(r"[A-Z0-9_]+", value):
        raise ValueError(f"consumer type {value!r} must be upper-case letters, digits and _")
    return value


def _not_text(value: object) -> object:
    """A list must be a real sequence: a string is not a list of its characters."""
    if isinstance(value, str | bytes | bytearray | Mapping):
        raise ValueError(f"expected a list, got {type(value).__name__} {value!r:.80}")
    return value


Uuid = Annotated[str, BeforeValidator(_uuid)]
ResourceClass = Annotated[str, Strict(), Field(max_length=255), AfterValidator(_resource_class)]
Amount = Annotated[int, Strict(), Field(ge=1, le=MAX_INT)]
#: 0 is a valid input (Nova sends it after reading an old microversion) that matches no
#: generation: a conflict with expected and actual, as docs/guarantees.md §3 says, not bad input.
Generation = Annotated[int, Strict(), Field(ge=0, le=MAX_VERSION)]
ConsumerType = Annotated[str, Strict(), Field(min_length=1, max_length=64), NoControl,
                         AfterValidator(_consumer_type)]
DeviceIds = Annotated[list[Name], BeforeValidator(_not_text), Field(max_length=MAX_DEVICE_IDS)]
Seconds = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]


def _distinct_keys(kind: str) -> Callable[[object], object]:
    """A validator refusing two spellings of one ``kind`` UUID as keys (they would silently
    merge)."""
    def check(value: object) -> object:
        if isinstance(value, dict):
            seen: dict[str, object] = {}
            for key in value:
                try:
                    canonical = _uuid(key)
                except ValueError:
                    continue  # reported by the key validator
                if canonical in seen:
                    raise ValueError(f"{kind} {canonical} is named twice "
                                     f"({seen[canonical]!r} and {key!r})")
                seen[canonical] = key
        return value
    return check


_distinct_uuid_keys = _distinct_keys("provider")
_distinct_consumer_keys = _distinct_keys("consumer")


AllocationsIn = Annotated[
    dict[Uuid, Annotated[dict[ResourceClass, Amount], Field(min_length=1)]],
    BeforeValidator(_distinct_uuid_keys),
]
DevicesIn = Annotated[dict[Uuid, dict[ResourceClass, DeviceIds]],
                      BeforeValidator(_distinct_uuid_keys)]
#: A move's scheduled destination names at least one provider.
DestinationIn = Annotated[AllocationsIn, Field(min_length=1)]


class Model(BaseModel):
    """Base of the inputs: frozen, and unknown fields are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class UuidIn(Model):
    """A lone id, for reads."""

    value: Uuid


class RequestIn(Model):
    """Who asked for a change and why; stored with every event the command appends (the
    actor's ``project`` when its token names one, as a Keystone token does)."""

    actor: ShortText = ""
    project: ShortText = ""
    request_id: ShortText = ""
    reason: FreeText = ""


class InventoryIn(Model):
    """One class's inventory; range rules beyond the types live in ``domain.rules``."""

    total: Annotated[int, Strict()]
    reserved: Annotated[int, Strict()] = 0
    min_unit: Annotated[int, Strict()] = 1
    max_unit: Annotated[int, Strict()] = MAX_INT
    step_size: Annotated[int, Strict()] = 1
    allocation_ratio: Annotated[float, Strict(), Field(allow_inf_nan=False)] = 1.0


class DeleteProviderIn(Model):
    """Delete a provider."""

    provider_uuid: Uuid
    expected_generation: Generation


class RenameProviderIn(Model):
    """Rename a provider."""

    provider_uuid: Uuid
    name: Name
    expected_generation: Generation


class ProviderIn(Model):
    """Register a provider."""

    provider_uuid: Uuid
    name: Name
    parent_uuid: Uuid | None = None


class InventoriesIn(Model):
    """Replace a provider's inventory."""

    provider_uuid: Uuid
    inventories: dict[ResourceClass, InventoryIn]
    expected_generation: Generation


class DevicesSetIn(Model):
    """Declare the devices of one class on a provider."""

    provider_uuid: Uuid
    resource_class: ResourceClass
    device_ids: DeviceIds
    expected_generation: Generation


class ConsumerWriteIn(Model):
    """One consumer's whole new allocation."""

    consumer_uuid: Uuid
    allocations: AllocationsIn
    expected_generation: Generation | None
    project_id: Name
    user_id: Name
    consumer_type: ConsumerType = INSTANCE
    devices: DevicesIn = Field(default_factory=dict)


class ClaimIn(ConsumerWriteIn):
    """A claim: like a write, but it must take something."""

    allocations: Annotated[AllocationsIn, Field(min_length=1)]


class ReleaseIn(Model):
    """Release a consumer."""

    consumer_uuid: Uuid
    expected_generation: Generation | None


class MoveIn(Model):
    """Start a move of an instance."""

    instance_uuid: Uuid
    migration_uuid: Uuid
    expected_generation: Generation | None
    destination: DestinationIn | None = None
    destination_root: Uuid | None = None


class ResolveIn(Model):
    """Confirm, revert or complete a migration."""

    migration_uuid: Uuid
    expected_generation: Generation | None = None
    instance_generation: Generation | None = None


class ClassIn(Model):
    """One class of one provider (``set_inventory``, ``delete_inventory``)."""

    provider_uuid: Uuid
    resource_class: ResourceClass
    expected_generation: Generation


class ResourceClassIn(Model):
    """Create or delete a custom resource class, or rename it to ``new_name``."""

    name: ResourceClass
    new_name: ResourceClass | None = None


class WritesIn(Model):
    """Several consumers' writes, one atomic append (``write_allocations``)."""

    writes: Annotated[list[ConsumerWriteIn], BeforeValidator(_not_text), Field(min_length=1)]


class ReshapeInventoriesIn(Model):
    """One provider's whole new inventory in a reshape, at the generation the caller read."""

    resource_provider_generation: Generation
    inventories: dict[ResourceClass, InventoryIn]


class ReshapeConsumerIn(Model):
    """One consumer's whole new allocation in a reshape (empty: it gives up what it holds)."""

    allocations: AllocationsIn
    project_id: Name
    user_id: Name
    consumer_generation: Generation | None
    consumer_type: ConsumerType = INSTANCE


class ReshapeIn(Model):
    """A reshape (Placement's ``POST /reshaper``): providers' inventories by provider UUID
    (at least one) and consumers' allocations by consumer UUID, in one append."""

    inventories: Annotated[dict[Uuid, ReshapeInventoriesIn],
                           BeforeValidator(_distinct_uuid_keys), Field(min_length=1)]
    allocations: Annotated[dict[Uuid, ReshapeConsumerIn],
                           BeforeValidator(_distinct_consumer_keys)]


class AgeIn(Model):
    """How old an in-flight migration must be, and the moment to measure from."""

    older_than_seconds: Seconds = 0.0
    now: Annotated[AwareDatetime, Strict()] | None = None


class FreeCapacityIn(Model):
    """A free-capacity query."""

    resource_class: ResourceClass
    at_least: Annotated[int, Strict(), Field(ge=0, le=MAX_INT)] = 1


def _unique(value: object) -> object:
    """A set given as a list names each member once (Placement: "has non-unique elements")."""
    if isinstance(value, list):
        seen: set[object] = set()
        for item in value:
            if isinstance(item, str) and item in seen:
                raise ValueError(f"{value!r:.200} has non-unique elements ({item!r})")
            seen.add(item)
    return value


class TraitIn(Model):
    """A custom trait to create or delete (the name's form is the domain's rule)."""

    name: Name


class ProviderTraitsIn(Model):
    """Replace a provider's traits."""

    provider_uuid: Uuid
    traits: Annotated[list[Name], BeforeValidator(_not_text), BeforeValidator(_unique)]
    expected_generation: Generation


class ProviderAggregatesIn(Model):
    """Replace a provider's aggregates; no generation (``None``) for Placement's writes
    before 1.19, which do not count as a change of the provider."""

    provider_uuid: Uuid
    aggregates: Annotated[list[Uuid], BeforeValidator(_not_text), BeforeValidator(_unique)]
    expected_generation: Generation | None


class ParentIn(Model):
    """Move a provider under another (``parent_uuid``) or make it a root (``None``)."""

    provider_uuid: Uuid
    parent_uuid: Uuid | None
    expected_generation: Generation
    reparenting: Annotated[bool, Strict()] = True


class TraitsQueryIn(Model):
    """A listing of traits: by names, by prefix, held by some provider or by none."""

    name_in: Annotated[list[Name], BeforeValidator(_not_text)] | None = None
    prefix: ShortText | None = None
    associated: Annotated[bool, Strict()] | None = None


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], **data: Any) -> M:
    """Validate ``data`` as ``model``; :class:`InvalidRequest` listing every problem, each
    with the field's path, what is wrong and the value given."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        problems = [_problem(e) for e in err.errors()]
        raise InvalidRequest(
            f"invalid {_label(model)}: " + "; ".join(problems),
            problems=problems,
        ) from None


def _label(model: type[BaseModel]) -> str:
    """``DevicesSetIn`` -> ``devices set``."""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", model.__name__.removesuffix("In")).lower()


def _problem(error: Any) -> str:
    where = ".".join(p if isinstance(p, str) and p.isprintable() else repr(p)
                     for p in error["loc"]) or "input"
    message = error["msg"]
    if error["type"] == "value_error":  # our own validators name the value already
        return f"{where}: {message.removeprefix('Value error, ')}"
    given = error.get("input")
    shown = repr(given) if isinstance(given, str | int | float | None) else type(given).__name__
    return f"{where}: {message} (got {shown:.100})"


def canonical_uuid(value: object) -> str:
    """A UUID in canonical form, else :class:`InvalidRequest` (reads take ids this way)."""
    return parse(UuidIn, value=value).value


def request_meta(request: Mapping[str, str] | RequestIn | None,
                 command_id: str | None = None) -> RequestMeta:
    """Validated request metadata (actor, request_id, reason) as events store it, plus the
    ``command_id`` (a fresh one unless given) shared by every event of this one command (so
    an audit can tell exactly where one command's atomic append ends, even when callers
    reuse request ids)."""
    meta = {"command_id": command_id or uuid4().hex}

    if request is None:
        return meta
    if type(request) is dict and all(type(k) is str and type(v) is str
                                     for k, v in request.items()):
        given = _given_request(tuple(request.items()))  # plain text: validated once
    else:
        given = _given(request)
    return {**given, **meta}


def _given(request: Mapping[str, str] | RequestIn) -> dict[str, str]:
    """The request fields given (those not empty), validated; a request that is not a
    mapping with string keys is :class:`InvalidRequest` too."""
    if not isinstance(request, RequestIn):
        if not isinstance(request, Mapping) or not all(isinstance(k, str) for k in request):
            raise InvalidRequest(f"request must be a mapping with string keys, got "
                                 f"{type(request).__name__} {request!r:.80}", field="request")
        request = parse(RequestIn, **request)
    return {k: v for k, v in request.model_dump().items() if v}


@lru_cache(maxsize=1024)
def _given_request(items: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """:func:`_given` of a plain mapping of text, kept: most callers send the same few
    requests (validation is a pure function of them; a refusal is not kept). Never
    changed by a caller: :func:`request_meta` copies it."""
    return _given(dict(items))
