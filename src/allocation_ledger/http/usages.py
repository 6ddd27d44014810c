"""``/resource_providers/{uuid}/usages`` and ``/usages`` (1.9; by consumer type from 1.38),
the totals Nova counts quotas with."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from allocation_ledger.http import errors, shapes
from allocation_ledger.http.context import Ctx, Reply
from allocation_ledger.http.providers import found


def provider_usages(ctx: Ctx) -> Reply:
    """``GET /resource_providers/{uuid}/usages``: every class with inventory, 0 when unused."""
    view = found(ctx, ctx.params["uuid"])
    return Reply(body={"resource_provider_generation": view.generation,
                       "usages": view.usages})


def total_usages(ctx: Ctx) -> Reply:
    """``GET /usages?project_id=&user_id=[&consumer_type=]``."""
    by_type = ctx.at_least(1, 38)
    q = shapes.query(ctx.query, {"project_id", "user_id"} | ({"consumer_type"} if by_type
                                                              else set()))
    if "project_id" not in q:
        raise errors.HTTPError(400, "Invalid query string parameters: 'project_id' is a "
                                    "required property")
    for key in ("project_id", "user_id", "consumer_type"):
        _bounded(q, key)
    consumer_type = q.get("consumer_type")
    if consumer_type is not None and not _CONSUMER_TYPE_GET.match(consumer_type):
        raise errors.HTTPError(400, f"Invalid query string parameters: {consumer_type!r} "
                                    "does not match '^[A-Z0-9_]+$|^all|^unknown$'")
    rows = ctx.ledger.reads.project_usages(
        q["project_id"], q.get("user_id"),
        None if consumer_type in (None, "all") else consumer_type)
    if by_type:
        usages: dict[str, Any] = {
            r.consumer_type: {**r.usages, "consumer_count": r.consumer_count} for r in rows}
        if consumer_type == "all":  # Placement: every type summed under one key
            usages = {"all": _summed(rows)} if rows else {}
        return Reply(body={"usages": usages})
    totals: dict[str, int] = {}
    for r in rows:
        for rc, n in r.usages.items():
            totals[rc] = totals.get(rc, 0) + n
    return Reply(body={"usages": totals})


_CONSUMER_TYPE_GET = re.compile(r"^[A-Z0-9_]+$|^all|^unknown$")
MAX_ID = 255


def _bounded(q: Mapping[str, str], key: str) -> None:
    """Placement's schema for ``/usages``: each id 1 to 255 characters."""
    value = q.get(key)
    if value is not None and not 1 <= len(value) <= MAX_ID:
        keyword = "minLength" if not value else "maxLength"
        raise errors.HTTPError(400, f"Invalid query string parameters: {key} must be 1 to "
                                    f"{MAX_ID} characters, not {len(value)}\n\nFailed "
                                    f"validating '{keyword}' in schema")


def _summed(rows: Iterable[Any]) -> dict[str, int]:
    total: dict[str, int] = {"consumer_count": 0}
    for r in rows:
        total["consumer_count"] += r.consumer_count
        for rc, n in r.usages.items():
            total[rc] = total.get(rc, 0) + n
    return total
