"""``/allocations/{consumer_uuid}``, ``POST /allocations`` and
``/resource_providers/{uuid}/allocations``.

The body's shape follows the version: a list of ``{"resource_provider": {"uuid"},
"resources"}`` before 1.12, a dict by provider from 1.12; ``project_id`` and ``user_id``
required from 1.8 (before, absent ones become Placement's incomplete-consumer ids);
``consumer_generation`` required from 1.28 (``null`` for a new consumer), and before 1.28 the
current generation is taken, so a write never checks it; ``consumer_type`` from 1.38.
"""

from __future__ import annotations

import re
from typing import Any

from allocation_ledger.application.views import ConsumerView
from allocation_ledger.domain.consumer import UNKNOWN
from allocation_ledger.domain.errors import ProviderNotFound, ResourceClassNotOnProvider
from allocation_ledger.http import errors, nova_moves, resource_classes, shapes
from allocation_ledger.http.context import Ctx, Reply
from allocation_ledger.http.providers import found

INCOMPLETE = "00000000-0000-0000-0000-000000000000"
MAX_INT = 2147483647
MAX_ID = 255  # project, user and consumer type ids, as Placement's schemas bound them
_CONSUMER_TYPE = re.compile(r"^[A-Z0-9_]+$")  # Placement's incomplete_consumer ids
_UUID_KEY = re.compile(r"^[0-9a-fA-F-]{36}$")  # Placement's schemas: a provider key (1.12)
_CLASS_KEY = re.compile(r"^[A-Z0-9_]+$")  # and a resource class key
#: the type of a consumer first written before 1.38, as Placement shows it from 1.38
DEFAULT_CONSUMER_TYPE = UNKNOWN


def _resources(value: Any, where: str) -> dict[str, int]:
    resources = shapes.obj(value, where=where)
    if not resources:
        raise shapes.invalid(f"{where} does not have enough properties", "minProperties")
    shapes.keys_match(resources, _CLASS_KEY, where)
    for rc in resources:
        shapes.typed(resources, rc, "integer")
        shapes.bounded(resources, rc, 1, MAX_INT)
    return resources


def _by_provider(ctx: Ctx, value: Any) -> dict[str, dict[str, int]]:
    """The allocations of one consumer in the version's format -> provider -> class -> n."""
    if not ctx.at_least(1, 12):
        if not isinstance(value, list) or not value:
            raise shapes.invalid("allocations must be a non-empty array", "minItems")
        out: dict[str, dict[str, int]] = {}
        for item in value:
            entry = shapes.obj(item, required=("resource_provider", "resources"),
                               where="allocation")
            rp = shapes.obj(entry["resource_provider"], required=("uuid",),
                            where="resource_provider")
            uuid = shapes.typed(rp, "uuid", "string")
            out[uuid] = _resources(entry["resources"], f"resources of {uuid}")
        return out
    allocations = shapes.obj(value, where="allocations")
    shapes.keys_match(allocations, _UUID_KEY, "allocations")
    return {rp: _resources(shapes.obj(entry, required=("resources",),
                                      allowed=("generation",), where=rp)["resources"],
                           f"resources of {rp}")
            for rp, entry in allocations.items()}


def _check_mappings(value: Any) -> None:
    """Refuse ``mappings`` (1.34) as Placement's schema does: an object of request group
    suffixes, each a non-empty list of provider UUIDs. They are not stored (Placement keeps
    them for nothing either)."""
    mappings = shapes.obj(value, where="mappings")
    if not mappings:
        raise shapes.invalid("{} does not have enough properties", "minProperties",
                             "mappings")
    for suffix in mappings:
        uuids = shapes.typed(mappings, suffix, "array")
        if not uuids:
            raise shapes.invalid(f"[] is too short ({suffix})", "minItems", "mappings")
        for uuid in uuids:
            shapes.formatted_uuid({"mappings": uuid}, "mappings")


def _required(ctx: Ctx) -> tuple[str, ...]:
    keys: tuple[str, ...] = ("allocations",)
    keys += ("project_id", "user_id") if ctx.at_least(1, 8) else ()
    keys += ("consumer_generation",) if ctx.at_least(1, 28) else ()
    keys += ("consumer_type",) if ctx.at_least(1, 38) else ()
    return keys


def _write(ctx: Ctx, consumer_uuid: str, data: dict[str, Any], empty_ok: bool = False
           ) -> dict[str, Any]:
    """One consumer's write for :meth:`Ledger.write_allocations` from its request body
    (``empty_ok``: empty allocations release at every version, as ``POST /allocations``
    allows; ``PUT`` allows them from 1.28)."""
    allowed = {"project_id", "user_id", "consumer_generation", "consumer_type"}
    allowed |= {"mappings"} if ctx.at_least(1, 34) else set()
    data = shapes.obj(data, required=_required(ctx), allowed=allowed,
                      where=f"consumer {consumer_uuid}")
    if "mappings" in data:
        _check_mappings(data["mappings"])
    allocations = _by_provider(ctx, data["allocations"])
    if not allocations and not empty_ok and not ctx.at_least(1, 28):
        raise shapes.invalid("allocations does not have enough properties", "minProperties")
    # Reading the consumer costs a round trip: only the versions that need it pay it.
    current = None if ctx.at_least(1, 38) else ctx.ledger.consumer(consumer_uuid)
    if current is None:
        generation = shapes.typed(data, "consumer_generation", "integer", "null")
        consumer_type = shapes.text(data, "consumer_type", MAX_ID)
        if consumer_type is not None and not _CONSUMER_TYPE.match(consumer_type):
            raise shapes.invalid(f"{consumer_type!r} does not match '^[A-Z0-9_]+$'",
                                 "pattern")
    else:
        generation = (shapes.typed(data, "consumer_generation", "integer", "null")
                      if ctx.at_least(1, 28) else current.generation)
        consumer_type = current.consumer_type or DEFAULT_CONSUMER_TYPE
    return {
        "consumer_uuid": consumer_uuid,
        "allocations": allocations,
        "expected_generation": generation,
        "project_id": shapes.text(data, "project_id", MAX_ID) or INCOMPLETE,
        "user_id": shapes.text(data, "user_id", MAX_ID) or INCOMPLETE,
        "consumer_type": consumer_type,
    }


def _apply(ctx: Ctx, writes: list[dict[str, Any]]) -> Reply:
    """Write every consumer of the request in one command, all or nothing.

    An entry that empties a consumer with a ``null`` generation says "this consumer holds
    nothing". When it holds nothing, the entry is left out (Placement writes nothing for
    it); when it holds allocations, the entry goes to the ledger, which refuses the whole
    write with a consumer generation conflict (409), as Placement does: never dropped while
    the others are written. A write that is Nova's swap, revert or confirm of a move is
    that move command instead (:mod:`.nova_moves`).
    """
    if nova_moves.written_as_move(ctx, writes):
        return Reply(204)
    live = [w for w in writes if w["allocations"] or w["expected_generation"] is not None
            or ctx.ledger.consumer(w["consumer_uuid"]).allocations]
    for w in live:  # a name no class can have: refused without a read
        for rc in sorted({rc for r in w["allocations"].values() for rc in r}):
            if not resource_classes.may_exist(rc):
                raise _no_such_class(w["consumer_uuid"], rc)
    if live:
        try:
            ctx.ledger.write_allocations(live, **ctx.write())
        except ProviderNotFound as err:  # Placement: an unknown provider is a bad request
            raise errors.HTTPError(400, f"Allocation for resource provider "
                                        f"'{err.provider_uuid}' that does not exist.") from err
        except ResourceClassNotOnProvider as err:
            # Placement tells a class that does not exist (400) from one the provider
            # lacks (409); asked only on refusal, so a write pays no read for it
            if not resource_classes.exists(ctx, err.resource_class):
                consumer = next((w["consumer_uuid"] for w in live if any(
                    err.resource_class in r for r in w["allocations"].values())), "")
                raise _no_such_class(consumer, err.resource_class) from err
            raise
    return Reply(204)


def _no_such_class(consumer_uuid: str, rc: str) -> errors.HTTPError:
    return errors.HTTPError(400, f"Unable to allocate inventory for consumer {consumer_uuid}: "
                                 f"No such resource class {rc}.")


def put_allocations(ctx: Ctx) -> Reply:
    """``PUT /allocations/{consumer_uuid}``: replace one consumer's allocations (204)."""
    consumer = shapes.uuid_param(ctx.params["consumer_uuid"], "consumer_uuid")
    return _apply(ctx, [_write(ctx, consumer, ctx.json())])


def post_allocations(ctx: Ctx) -> Reply:
    """``POST /allocations`` (1.13): several consumers in one atomic write (204)."""
    data = shapes.obj(ctx.json())
    writes = [_write(ctx, shapes.uuid_param(c, "consumer_uuid"), body, empty_ok=True)
              for c, body in data.items()]
    if not writes:
        raise shapes.invalid("body does not have enough properties", "minProperties")
    return _apply(ctx, writes)


def show_allocations(ctx: Ctx) -> Reply:
    """``GET /allocations/{consumer_uuid}``: ``{"allocations": {}}`` when it holds nothing."""
    try:
        consumer = shapes.uuid_param(ctx.params["consumer_uuid"], "consumer_uuid")
    except errors.HTTPError:  # Placement: no consumer has that id, so nothing is held
        return Reply(body={"allocations": {}})
    return Reply(body=serialize_consumer(ctx, ctx.ledger.consumer(consumer)))


def serialize_consumer(ctx: Ctx, view: ConsumerView) -> dict[str, Any]:
    """A consumer's allocations as Placement shows them at the request's version."""
    providers = ctx.ledger.providers_many(view.allocations)  # one query for them all
    body: dict[str, Any] = {"allocations": {
        rp: {"generation": (providers.get(rp) or ctx.ledger.provider(rp)).generation,
             "resources": dict(r)}
        for rp, r in view.allocations.items()}}
    if view.allocations and ctx.at_least(1, 12):
        body["project_id"], body["user_id"] = view.project_id, view.user_id
        if ctx.at_least(1, 28):
            body["consumer_generation"] = view.generation
        if ctx.at_least(1, 38):
            body["consumer_type"] = view.consumer_type
    return body


def delete_allocations(ctx: Ctx) -> Reply:
    """``DELETE /allocations/{consumer_uuid}``: 204, or 404 when it holds nothing. Of a
    migration whose instance claimed its destination, the move's confirm."""
    consumer = ctx.params["consumer_uuid"]
    try:
        consumer = shapes.uuid_param(consumer, "consumer_uuid")
    except errors.HTTPError:
        raise errors.HTTPError(404, f"No allocations for consumer '{consumer}'") from None
    if nova_moves.deleted_as_move(ctx, consumer):  # a migration's, with a destination
        return Reply(204)
    if not ctx.ledger.force_release(consumer, **ctx.write()):
        raise errors.HTTPError(404, f"No allocations for consumer '{consumer}'")
    return Reply(204)


def provider_allocations(ctx: Ctx) -> Reply:
    """``GET /resource_providers/{uuid}/allocations``: every consumer on one provider."""
    view = found(ctx, ctx.params["uuid"])
    allocations: dict[str, Any] = {}
    for held in ctx.ledger.reads.holdings_on(view.provider_uuid):
        entry: dict[str, Any] = {"resources": dict(held.resources)}
        if ctx.at_least(1, 28):
            entry["consumer_generation"] = held.generation
        allocations[held.consumer_uuid] = entry
    return Reply(body={"allocations": allocations,
                       "resource_provider_generation": view.generation})


#: one consumer's part of a body checked as Placement's schema checks it (the reshaper's too)
consumer_write = _write
