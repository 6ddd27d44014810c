"""The ledger's own endpoints, beyond Placement, under ``/ledger``.

Moves as first-class commands (``POST /ledger/migrations/{uuid}/{action}``: ``swap``,
``confirm``, ``revert``, ``force-live-migrate``, ``evacuate``, ``complete-evacuation``),
a migration's context, a provider's devices, the history of a stream, state at a time or
position, and the audit. Bodies use the service API's own argument names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from typing import Any

from allocation_ledger.application.views import MigrationView
from allocation_ledger.audit import history, pointintime
from allocation_ledger.audit.run import audit
from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.http import errors, shapes
from allocation_ledger.http.context import Ctx, Reply, Responder
from allocation_ledger.http.microversion import Version

M = "/ledger/migrations/{migration_uuid}"

# action -> (ledger method, body keys it takes, required keys)
MOVES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "swap": ("swap", ("instance_uuid", "expected_generation", "kind", "destination"),
             ("instance_uuid", "expected_generation")),
    "confirm": ("confirm", ("expected_generation",), ("expected_generation",)),
    "revert": ("revert", ("expected_generation", "instance_generation"),
               ("expected_generation", "instance_generation")),
    "force-live-migrate": ("force_live_migrate",
                           ("instance_uuid", "destination_root", "expected_generation"),
                           ("instance_uuid", "destination_root", "expected_generation")),
    "evacuate": ("evacuate", ("instance_uuid", "expected_generation", "destination",
                              "destination_root"), ("instance_uuid", "expected_generation")),
    "complete-evacuation": ("complete_evacuation", ("instance_generation",),
                            ("instance_generation",)),
}


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def migration_body(view: MigrationView) -> dict[str, Any]:
    """A migration as JSON."""
    return {k: _plain(v) for k, v in asdict(view).items()}


def _move(action: str) -> Responder:
    method, allowed, required = MOVES[action]

    def handle(ctx: Ctx) -> Reply:
        data = shapes.obj(ctx.json(), required=required, allowed=allowed)
        migration = shapes.uuid_param(ctx.params["migration_uuid"], "migration_uuid")
        positional = [data.pop(k) for k in required]
        # the migration's uuid follows the instance's, or comes first
        positional.insert(1 if "instance_uuid" in required else 0, migration)
        command: Callable[..., MigrationView] = getattr(ctx.ledger, method)
        view = command(*positional, **data, **ctx.write())
        return Reply(body=migration_body(view))

    handle.__name__ = f"move_{method}"
    return handle


def show_migration(ctx: Ctx) -> Reply:
    """``GET /ledger/migrations/{uuid}``."""
    return Reply(body=migration_body(ctx.ledger.migration(ctx.params["migration_uuid"])))


def set_devices(ctx: Ctx) -> Reply:
    """``PUT /ledger/providers/{uuid}/devices/{rc}``: ``{"device_ids", "generation"}``."""
    data = shapes.obj(ctx.json(), required=("device_ids", "generation"))
    view = ctx.ledger.set_devices(ctx.params["uuid"], ctx.params["resource_class"],
                                  shapes.typed(data, "device_ids", "array"),
                                  shapes.typed(data, "generation", "integer"),
                                  **ctx.write())
    return Reply(body={"generation": view.generation, "devices": view.devices})


def show_provider(ctx: Ctx) -> Reply:
    """``GET /ledger/providers/{uuid}``: a tree's providers with usage and devices."""
    tree = ctx.ledger.tree(ctx.params["uuid"])
    return Reply(body={uuid: {"name": v.name, "generation": v.generation,
                              "usages": v.usages, "devices": v.devices,
                              "inventories": {rc: asdict(i) for rc, i in v.inventories.items()}}
                       for uuid, v in tree.items()})


HISTORIES = {"consumer": history.consumer_history, "provider": history.provider_history,
             "migration": history.migration_history}
STATES: dict[str, Callable[..., Any]] = {
    "consumer": pointintime.consumer_at, "provider": pointintime.provider_at,
    "migration": pointintime.migration_at}


def _kind(ctx: Ctx, known: dict[str, Any]) -> str:
    kind = ctx.params["kind"]
    if kind not in known:
        raise errors.HTTPError(404, f"no {kind} history: one of {', '.join(known)}")
    return kind


def show_history(ctx: Ctx) -> Reply:
    """``GET /ledger/history/{consumer|provider|migration}/{uuid}``: every event with time,
    actor, request id, reason and what it changed."""
    entries = HISTORIES[_kind(ctx, HISTORIES)](ctx.ledger.store, ctx.params["uuid"])
    return Reply(body={"history": [e.to_dict() for e in entries]})


def show_state_at(ctx: Ctx) -> Reply:
    """``GET /ledger/state-at/{kind}/{uuid}?at=ISO-8601`` or ``?position=N``."""
    kind = _kind(ctx, STATES)
    q = shapes.query(ctx.query, {"at", "position"})
    try:
        when = datetime.fromisoformat(q["at"]) if "at" in q else None
        position = int(q["position"]) if "position" in q else None
    except ValueError as err:
        raise InvalidRequest(f"bad 'at' or 'position': {err}") from None
    store = ctx.ledger.store
    found = STATES[kind](store, ctx.params["uuid"], pointintime.cut(store, position, when))
    return Reply(body={"position": found.position, "time": _plain(found.time),
                       "state": {k: _plain(v) for k, v in asdict(found.value).items()}})


#: ten years: beyond it the age of a move overflows the date arithmetic
MAX_STALE_AFTER = 10 * 365 * 24 * 3600.0


def run_audit(ctx: Ctx) -> Reply:
    """``GET /ledger/audit[?stale_after=SECONDS]``: the audit's report and findings."""
    q = shapes.query(ctx.query, {"stale_after"})
    try:
        stale = float(q.get("stale_after", 3600))
    except ValueError:
        raise InvalidRequest(f"bad stale_after {q['stale_after']!r}") from None
    if not 0 <= stale <= MAX_STALE_AFTER:  # refuses nan and inf too
        raise InvalidRequest(f"stale_after must be 0 to {MAX_STALE_AFTER:.0f} seconds, not "
                             f"{q['stale_after']!r}")
    return Reply(body=audit(ctx.ledger.store, stale_after=stale).to_dict())


def show_command(ctx: Ctx) -> Reply:
    """``GET /ledger/commands/{command_id}``: what became of a command (an
    ``Idempotency-Key``): applied or not, where, when, by whom, which streams."""
    return Reply(body=ctx.ledger.command(ctx.params["command_id"]).to_dict())


ROUTES: tuple[tuple[str, str, Responder, Version], ...] = (
    *((f"{M}/{action}", "POST", _move(action), (1, 0)) for action in MOVES),
    (M, "GET", show_migration, (1, 0)),
    ("/ledger/providers/{uuid}", "GET", show_provider, (1, 0)),
    ("/ledger/providers/{uuid}/devices/{resource_class}", "PUT", set_devices, (1, 0)),
    ("/ledger/history/{kind}/{uuid}", "GET", show_history, (1, 0)),
    ("/ledger/state-at/{kind}/{uuid}", "GET", show_state_at, (1, 0)),
    ("/ledger/audit", "GET", run_audit, (1, 0)),
    ("/ledger/commands/{command_id}", "GET", show_command, (1, 0)),
)
