"""``/resource_providers/{uuid}/aggregates`` (1.1 on), in Placement's two formats.

Before 1.19 the body of a ``PUT`` is a plain list of aggregate UUIDs and the answer
``{"aggregates": [...]}``; the write names no generation and does not advance it. From 1.19
the body is ``{"aggregates": [...], "resource_provider_generation": N}``, checked (409
``placement.concurrent_update`` when stale) and advanced, and the answers carry the
generation.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from allocation_ledger.application.views import ProviderView
from allocation_ledger.domain.errors import ProviderGenerationConflict
from allocation_ledger.http import errors, shapes
from allocation_ledger.http.context import Ctx, Reply
from allocation_ledger.http.providers import found
from allocation_ledger.http.traits import cache_headers

STALE = ("Resource provider's generation already changed. Please update the generation and "
         "try again.")


def _body(ctx: Ctx, view: ProviderView, listed: list[str] | None = None) -> dict[str, Any]:
    """The answer: the aggregates (as the request listed them, after a ``PUT``, as
    Placement echoes them) and, from 1.19, the generation."""
    body: dict[str, Any] = {"aggregates": list(view.aggregates) if listed is None else listed}
    if ctx.at_least(1, 19):
        body["resource_provider_generation"] = view.generation
    return body


def provider_aggregates(ctx: Ctx) -> Reply:
    """``GET .../aggregates``."""
    return Reply(body=_body(ctx, found(ctx, ctx.params["uuid"])), headers=cache_headers(ctx))


def _uuids(value: Any) -> list[str]:
    """A JSON array of distinct UUIDs, as Placement's schema checks it."""
    if not isinstance(value, list):
        raise shapes.invalid(f"{value!r:.100} is not of type 'array'")
    for item in value:
        if not isinstance(item, str):
            raise shapes.invalid(f"{item!r:.100} is not of type 'string'")
        try:
            UUID(item)
        except ValueError:
            raise shapes.invalid(f"{item!r:.100} is not a 'uuid'") from None
    if len(set(value)) != len(value):
        raise shapes.invalid(f"{value!r:.200} has non-unique elements")
    return list(value)


def set_provider_aggregates(ctx: Ctx) -> Reply:
    """``PUT .../aggregates``: the whole set (a list before 1.19, an object with the
    generation from 1.19)."""
    view = found(ctx, ctx.params["uuid"])
    data = ctx.json()
    generation: int | None = None
    if ctx.at_least(1, 19):
        body = shapes.obj(data, required=("aggregates", "resource_provider_generation"),
                          allowed=("aggregates", "resource_provider_generation"))
        aggregates = _uuids(body["aggregates"])
        generation = shapes.typed(body, "resource_provider_generation", "integer")
        if generation != view.generation:
            raise errors.HTTPError(409, STALE, errors.CONCURRENT_UPDATE)
    else:
        aggregates = _uuids(data)
    try:
        new = ctx.ledger.set_aggregates(view.provider_uuid, aggregates, generation,
                                        **ctx.write())
    except ProviderGenerationConflict as err:
        raise errors.HTTPError(409, STALE, errors.CONCURRENT_UPDATE) from err
    return Reply(body=_body(ctx, new, aggregates), headers=cache_headers(ctx))
