"""``/traits``, ``/traits/{name}`` and ``/resource_providers/{uuid}/traits`` (1.6 on).

Placement's answers: ``PUT /traits/{name}`` 201 when created, 204 when it exists, 400 for a
name that is not ``CUSTOM_*``; ``GET`` 204 or 404; ``DELETE`` 400 for a standard trait, 404
for an unknown one, 409 while a provider has it. A provider's traits are replaced whole
with its generation (409 ``placement.concurrent_update`` when stale); a trait that does not
exist is a 400.
"""

from __future__ import annotations

from email.utils import formatdate
from typing import Any

from allocation_ledger.application.views import ProviderView
from allocation_ledger.domain import trait as trait_rules
from allocation_ledger.domain.errors import (
    ProviderGenerationConflict,
    StandardTrait,
    TraitInUse,
    TraitNotFound,
    UnknownTraits,
)
from allocation_ledger.http import errors, shapes
from allocation_ledger.http.context import Ctx, Reply
from allocation_ledger.http.providers import found

#: Placement's words for a stale generation on a provider's traits.
STALE = ("Resource provider's generation already changed. Please update the generation and "
         "try again.")
_NAME_FORM = ("Badly formatted name parameter. Expected name query string parameter in form: "
              "?name=[in|startswith]:[name1,name2|prefix]. Got: \"{}\"")


def cache_headers(ctx: Ctx) -> dict[str, str]:
    """From 1.15 Placement marks its trait and aggregate answers (reads and writes, not
    deletions) ``cache-control: no-cache`` with a ``last-modified`` time; the ledger keeps
    no modification time per trait, so it is the time of the answer."""
    if not ctx.at_least(1, 15):
        return {}
    return {"cache-control": "no-cache", "last-modified": formatdate(usegmt=True)}


def _location(ctx: Ctx, name: str) -> dict[str, str]:
    return {"location": f"/traits/{name}", **cache_headers(ctx)}


def list_traits(ctx: Ctx) -> Reply:
    """``GET /traits``: ``name=in:A,B`` or ``name=startswith:P``; ``associated=true|false``."""
    q = shapes.query(ctx.query, {"name", "associated"})
    name_in: list[str] | None = None
    prefix: str | None = None
    if "name" in q:
        op, sep, value = q["name"].partition(":")
        if not sep:
            raise errors.HTTPError(400, _NAME_FORM.format(q["name"]))
        if op == "in":
            name_in = value.split(",")
        elif op == "startswith":
            prefix = value
    associated: bool | None = None
    if "associated" in q:
        if q["associated"].lower() not in ("true", "false"):
            raise errors.HTTPError(400, 'The query parameter "associated" only accepts '
                                        '"true" or "false"')
        associated = q["associated"].lower() == "true"
    names = ctx.ledger.traits(name_in=name_in, prefix=prefix, associated=associated)
    return Reply(body={"traits": names}, headers=cache_headers(ctx))


def show_trait(ctx: Ctx) -> Reply:
    """``GET /traits/{name}``: 204, or 404."""
    name = ctx.params["name"]
    if not ctx.ledger.trait_exists(name):
        raise errors.HTTPError(404, f"No such trait(s): {name}.")
    return Reply(204, None, cache_headers(ctx))


def put_trait(ctx: Ctx) -> Reply:
    """``PUT /traits/{name}``: 201 created, 204 when it existed; 400 for a bad name."""
    name = ctx.params["name"]
    if not trait_rules.is_custom_name(name):
        raise errors.HTTPError(400, trait_rules.INVALID_CUSTOM)
    created = ctx.ledger.create_trait(name, **ctx.write())
    return Reply(201 if created else 204, None, _location(ctx, name))


def delete_trait(ctx: Ctx) -> Reply:
    """``DELETE /traits/{name}``: 204; 400 standard, 404 unknown, 409 in use."""
    name = ctx.params["name"]
    try:
        ctx.ledger.delete_trait(name, **ctx.write())
    except StandardTrait as err:
        raise errors.HTTPError(400, err.message) from err
    except TraitNotFound as err:
        raise errors.HTTPError(404, err.message) from err
    except TraitInUse as err:
        raise errors.HTTPError(409, err.message) from err
    return Reply(204)


def _provider_traits(view: ProviderView) -> dict[str, Any]:
    return {"traits": list(view.traits), "resource_provider_generation": view.generation}


def provider_traits(ctx: Ctx) -> Reply:
    """``GET /resource_providers/{uuid}/traits``."""
    return Reply(body=_provider_traits(found(ctx, ctx.params["uuid"])),
                 headers=cache_headers(ctx))


def set_provider_traits(ctx: Ctx) -> Reply:
    """``PUT /resource_providers/{uuid}/traits``: the whole set, with the generation."""
    view = found(ctx, ctx.params["uuid"])
    data = shapes.obj(ctx.json(), required=("traits", "resource_provider_generation"),
                      allowed=("traits", "resource_provider_generation"))
    names = shapes.typed(data, "traits", "array")
    for name in names:
        if not isinstance(name, str) or not 1 <= len(name) <= trait_rules.MAX_TRAIT_LENGTH:
            raise shapes.invalid(f"{name!r} is not a trait name (traits)")
    if len(set(names)) != len(names):
        raise shapes.invalid(f"{names!r} has non-unique elements")
    generation = shapes.typed(data, "resource_provider_generation", "integer")
    if generation != view.generation:
        raise errors.HTTPError(409, STALE, errors.CONCURRENT_UPDATE)
    try:
        new = ctx.ledger.set_traits(view.provider_uuid, names, generation, **ctx.write())
    except UnknownTraits as err:
        raise errors.HTTPError(400, f"No such trait {', '.join(err.names)}") from err
    except ProviderGenerationConflict as err:
        raise errors.HTTPError(409, STALE, errors.CONCURRENT_UPDATE) from err
    return Reply(body=_provider_traits(new), headers=cache_headers(ctx))


def delete_provider_traits(ctx: Ctx) -> Reply:
    """``DELETE /resource_providers/{uuid}/traits``: no traits left (204)."""
    view = found(ctx, ctx.params["uuid"])
    ctx.ledger.set_traits(view.provider_uuid, [], view.generation, **ctx.write())
    return Reply(204)
