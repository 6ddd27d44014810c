"""Command inputs, validated at the boundary with pydantic before anything is written.

Ids are UUIDs (returned in canonical lower-case form), resource classes are standard or
``CUSTOM_*`` names, amounts and generations are strict integers. A bad input raises
:class:`~allocation_ledger.domain.errors.InvalidRequest` listing every problem found.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar
from uuid import UUID, uuid4

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
)

from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.domain.values import MAX_INT, RequestMeta, is_valid_resource_class

_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


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


def _resource_class(value: str) -> str:
    if not is_valid_resource_class(value):
        raise ValueError(
            f"unknown resource class {value!r}: use a standard class or CUSTOM_[A-Z0-9_]+"
        )
    return value


Uuid = Annotated[str, BeforeValidator(_uuid)]
ResourceClass = Annotated[str, AfterValidator(_resource_class)]
Amount = Annotated[int, Strict(), Field(ge=1, le=MAX_INT)]
#: 0 is a valid input (Nova sends it after reading an old microversion) that matches no
#: generation: a conflict with expected and actual, as DESIGN §3 says, not bad input.
Generation = Annotated[int, Strict(), Field(ge=0)]
Name = Annotated[str, Field(min_length=1, max_length=255)]
ConsumerType = Annotated[str, Field(pattern=r"^[A-Z0-9_]+$", max_length=64)]


def _distinct_uuid_keys(value: object) -> object:
    """Refuse two spellings of one UUID as keys (they would silently merge)."""
    if isinstance(value, dict):
        seen: dict[str, object] = {}
        for key in value:
            try:
                canonical = _uuid(key)
            except ValueError:
                continue  # reported by the key validator
            if canonical in seen:
                raise ValueError(f"provider {canonical} is named twice ({seen[canonical]!r} and "
                                 f"{key!r})")
            seen[canonical] = key
    return value


AllocationsIn = Annotated[
    dict[Uuid, Annotated[dict[ResourceClass, Amount], Field(min_length=1)]],
    BeforeValidator(_distinct_uuid_keys),
]
DevicesIn = Annotated[dict[Uuid, dict[ResourceClass, list[Name]]],
                      BeforeValidator(_distinct_uuid_keys)]


class Model(BaseModel):
    """Base of the inputs: frozen, and unknown fields are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class UuidIn(Model):
    """A lone id, for reads."""

    value: Uuid


class RequestIn(Model):
    """Who asked for a change and why; stored with every event the command appends."""

    actor: str = Field(default="", max_length=255)
    request_id: str = Field(default="", max_length=255)
    reason: str = Field(default="", max_length=4096)


class InventoryIn(Model):
    """One class's inventory; range rules beyond the types live in ``domain.rules``."""

    total: Annotated[int, Strict()]
    reserved: Annotated[int, Strict()] = 0
    min_unit: Annotated[int, Strict()] = 1
    max_unit: Annotated[int, Strict()] = MAX_INT
    step_size: Annotated[int, Strict()] = 1
    allocation_ratio: Annotated[float, Strict()] = 1.0


class DeleteProviderIn(Model):
    """Delete a provider."""

    provider_uuid: Uuid
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
    device_ids: list[Name]
    expected_generation: Generation


class ConsumerWriteIn(Model):
    """One consumer's whole new allocation."""

    consumer_uuid: Uuid
    allocations: AllocationsIn
    expected_generation: Generation | None
    project_id: Name
    user_id: Name
    consumer_type: ConsumerType = "INSTANCE"
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
    destination: AllocationsIn | None = None
    destination_root: Uuid | None = None


class ResolveIn(Model):
    """Confirm, revert or complete a migration."""

    migration_uuid: Uuid
    expected_generation: Generation | None = None
    instance_generation: Generation | None = None


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], **data: Any) -> M:
    """Validate ``data`` as ``model``; :class:`InvalidRequest` listing every problem."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in err.errors()
        ]
        raise InvalidRequest(
            f"invalid {model.__name__.removesuffix('In').lower()}: " + "; ".join(problems),
            problems=problems,
        ) from None


def request_meta(request: Mapping[str, str] | RequestIn | None,
                 command_id: str | None = None) -> RequestMeta:
    """Validated request metadata (actor, request_id, reason) as events store it, plus the
    ``command_id`` (a fresh one unless given) shared by every event of this one command (so
    an audit can tell exactly where one command's atomic append ends, even when callers
    reuse request ids)."""
    meta = {"command_id": command_id or uuid4().hex}
    if request is None:
        return meta
    model = request if isinstance(request, RequestIn) else parse(RequestIn, **dict(request))
    return {**{k: v for k, v in model.model_dump().items() if v}, **meta}
