"""``/resource_providers`` and ``/resource_providers/{uuid}``."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from allocation_ledger.application.views import ProviderView
from allocation_ledger.domain.errors import InvalidRequest, ProviderNotFound
from allocation_ledger.http import errors, provider_filters, shapes
from allocation_ledger.http.context import Ctx, Reply

MAX_NAME = 200  # Placement's schema bounds a provider's name at 200 characters


def _links(ctx: Ctx, uuid: str) -> list[dict[str, str]]:
    url = f"/resource_providers/{uuid}"
    rels = ["inventories", "usages"]
    rels += ["aggregates"] if ctx.at_least(1, 1) else []
    rels += ["traits"] if ctx.at_least(1, 6) else []
    rels += ["allocations"] if ctx.at_least(1, 11) else []
    return [{"rel": "self", "href": url}] + [{"rel": r, "href": f"{url}/{r}"} for r in rels]


def _serialize(ctx: Ctx, uuid: str, name: str, generation: int, parent: str | None,
               root: str) -> dict[str, Any]:
    data: dict[str, Any] = {"uuid": uuid, "name": name, "generation": generation,
                            "links": _links(ctx, uuid)}
    if ctx.at_least(1, 14):
        data["parent_provider_uuid"] = parent
        data["root_provider_uuid"] = root
    return data


def serialize_view(ctx: Ctx, v: ProviderView) -> dict[str, Any]:
    """A provider as Placement shows it at the request's version."""
    return _serialize(ctx, v.provider_uuid, v.name, v.generation, v.parent_uuid, v.root_uuid)


def found(ctx: Ctx, uuid: str) -> ProviderView:
    """The provider a path names; Placement's 404 when it does not exist (a malformed
    UUID names no provider: 404 too, as Placement answers)."""
    try:
        return ctx.ledger.provider(shapes.uuid_param(uuid, "resource provider uuid"))
    except (ProviderNotFound, errors.HTTPError):
        raise errors.HTTPError(404, f"No resource provider with uuid {uuid} found",
                               errors.PROVIDER_NOT_FOUND) from None


def list_providers(ctx: Ctx) -> Reply:
    """``GET /resource_providers``: filters ``uuid``, ``name``, and those of
    :mod:`.provider_filters` (``member_of``, ``resources``, ``in_tree``, ``required``)."""
    q = shapes.query(ctx.query, provider_filters.allowed(ctx))
    wanted = provider_filters.parse(ctx)
    if wanted is None:
        rows = (ctx.ledger.reads.providers_named(q["name"]) if "name" in q
                else ctx.ledger.reads.providers())
    else:
        rows = ctx.ledger.reads.providers_matching(wanted)
    if "uuid" in q:
        uuid = shapes.query_uuid(q["uuid"], "uuid")
        rows = [r for r in rows if r.provider_uuid == uuid]
    if "name" in q:
        rows = [r for r in rows if r.name == q["name"]]
    return Reply(body={"resource_providers": [
        _serialize(ctx, r.provider_uuid, r.name, r.generation, r.parent_uuid, r.root_uuid)
        for r in rows]})


def create_provider(ctx: Ctx) -> Reply:
    """``POST /resource_providers``: 201 and a Location (before 1.20), 200 and the provider
    (1.20 on); 409 ``placement.duplicate_name`` for a taken name or UUID."""
    allowed = {"uuid", "parent_provider_uuid"} if ctx.at_least(1, 14) else {"uuid"}
    data = shapes.obj(ctx.json(), required=("name",), allowed=allowed)
    name = shapes.text(data, "name", MAX_NAME, min_length=0) or ""
    uuid = shapes.formatted_uuid(data, "uuid") or str(uuid4())
    parent = shapes.formatted_uuid(data, "parent_provider_uuid", nullable=True)

    def refused(reason: str) -> errors.HTTPError:  # Placement's words for its refusal
        return errors.HTTPError(400, f'Unable to create resource provider "{name}", {uuid}: '
                                     f"Object action create failed because: {reason}")

    if parent is not None and parent == uuid:
        raise refused("parent provider UUID cannot be same as UUID. Please set parent "
                      "provider UUID to None if there is no parent.")
    _name_is_free(ctx, name)
    try:
        view = ctx.ledger.register_provider(uuid, name, parent_uuid=parent, **ctx.write())
    except ProviderNotFound as err:
        raise refused("parent provider UUID does not exist.") from err
    location = {"location": f"/resource_providers/{view.provider_uuid}"}
    if ctx.at_least(1, 20):
        return Reply(200, serialize_view(ctx, view), location)
    return Reply(201, None, location)


def show_provider(ctx: Ctx) -> Reply:
    """``GET /resource_providers/{uuid}``."""
    return Reply(body=serialize_view(ctx, found(ctx, ctx.params["uuid"])))


def update_provider(ctx: Ctx) -> Reply:
    """``PUT /resource_providers/{uuid}``: rename (409 ``placement.duplicate_name`` for a
    taken name) and, from 1.14, a new parent: a root may take one; another parent, or none,
    from 1.37 (Placement's re-parenting); 400 for a loop or a parent that does not
    exist."""
    view = found(ctx, ctx.params["uuid"])
    allowed = {"parent_provider_uuid"} if ctx.at_least(1, 14) else set()
    data = shapes.obj(ctx.json(), required=("name",), allowed=allowed)
    name = shapes.text(data, "name", MAX_NAME, min_length=0) or ""
    parent = shapes.typed(data, "parent_provider_uuid", "string", "null")
    if name != view.name:
        _name_is_free(ctx, name)
    if "parent_provider_uuid" in data and parent != view.parent_uuid:
        view = _set_parent(ctx, view, parent)
    if name != view.name:
        view = ctx.ledger.rename_provider(view.provider_uuid, name, view.generation,
                                          **ctx.write())
    return Reply(body=serialize_view(ctx, view))


def _set_parent(ctx: Ctx, view: ProviderView, parent: str | None) -> ProviderView:
    """The provider moved under ``parent`` (or made a root), refused as Placement does."""
    def refused(reason: str) -> errors.HTTPError:
        return errors.HTTPError(400, f"Unable to save resource provider {view.provider_uuid}: "
                                     f"Object action update failed because: {reason}")

    try:
        return ctx.ledger.set_parent(view.provider_uuid, parent, view.generation,
                                     reparenting=ctx.at_least(1, 37), **ctx.write())
    except ProviderNotFound as err:
        raise refused("parent provider UUID does not exist.") from err
    except InvalidRequest as err:
        raise refused(err.message) from err


def _name_is_free(ctx: Ctx, name: str) -> None:
    if ctx.ledger.reads.providers_named(name):
        raise errors.HTTPError(409, f"Conflicting resource provider name: {name} already "
                                    "exists.", errors.DUPLICATE_NAME)


def delete_provider(ctx: Ctx) -> Reply:
    """``DELETE /resource_providers/{uuid}``: 204; 409 ``...inuse`` with allocations, 409
    ``...cannot_delete_parent`` with children; 404 "... found for delete" (Placement's
    words) when there is no such provider."""
    try:
        view = found(ctx, ctx.params["uuid"])
    except errors.HTTPError as err:
        raise errors.HTTPError(404, f"{err.detail} for delete", err.code) from None
    ctx.ledger.delete_provider(view.provider_uuid, view.generation, **ctx.write())
    return Reply(204)
