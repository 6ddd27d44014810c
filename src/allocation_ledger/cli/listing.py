"""``allocation-ledger list providers|consumers|migrations``: full UUIDs, names, trees,
owners and moves, as a table or JSON."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from allocation_ledger.cli.options import non_negative_float, resource_amount

if TYPE_CHECKING:
    from allocation_ledger.application.ledger import Ledger
    from allocation_ledger.application.views import ProviderView

NAME = "list"
HELP = "list providers (with room), consumers (by project, user) or migrations (stale ones)"
EXAMPLES = """\
  allocation-ledger list providers
  allocation-ledger list providers --resource VCPU=4 --resource MEMORY_MB=8192
  allocation-ledger list providers --required HW_CPU_X86_AVX2 --required '!CUSTOM_OLD'
  allocation-ledger list providers --required in:CUSTOM_A,CUSTOM_B --member-of AGG_UUID
  allocation-ledger list consumers --project 7c3a --user alice --json
  allocation-ledger list migrations --stale-after 3600     # in flight for over an hour
  allocation-ledger list migrations --all                  # finished ones too
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """What to list and its filters."""
    parser.add_argument("what", choices=["providers", "consumers", "migrations"],
                        help="what to list")
    parser.add_argument("--resource", type=resource_amount, action="append", default=[],
                        metavar="CLASS=AMOUNT",
                        help="providers: only those with this much free (repeatable)")
    parser.add_argument("--required", action="append", default=[], metavar="TRAIT",
                        help="providers: with this trait (repeatable; !TRAIT: without it; "
                             "in:A,B: with at least one of them)")
    parser.add_argument("--member-of", action="append", default=[], metavar="AGGREGATE",
                        help="providers: in this aggregate (repeatable: in all of them; "
                             "in:A,B: in at least one; !A or !in:A,B: in none of them)")
    parser.add_argument("--in-tree", default=None, metavar="UUID",
                        help="providers: of the tree this provider is in")
    parser.add_argument("--project", default=None, help="consumers: of this project only")
    parser.add_argument("--user", default=None, help="consumers: of this user only")
    parser.add_argument("--stale-after", type=non_negative_float, default=0.0,
                        metavar="SECONDS",
                        help="migrations: in flight for at least this long (default 0)")
    parser.add_argument("--all", action="store_true",
                        help="migrations: finished ones too")


def run(args: argparse.Namespace) -> int:
    """Print the listing."""
    from allocation_ledger.bootstrap import open_ledger
    from allocation_ledger.cli.output import print_json, table

    with open_ledger(args.url, read_only=True) as ledger:
        headers, rows = LISTERS[args.what](ledger, args)
    if args.json:
        print_json(rows)
    else:
        table([h.upper() for h in headers],
              [[_cell(row[h], args.format) for h in headers] for row in rows], fmt=args.format)
    return 0


def _cell(value: Any, fmt: str) -> str:
    from allocation_ledger.cli.output import cell

    if isinstance(value, dict):   # a provider's usage: {class: {"used", "capacity", ...}}
        return ", ".join(f"{rc} {u['used']}/{u['capacity']}" for rc, u in value.items())
    return cell(value, fmt)


def providers(ledger: Ledger, args: argparse.Namespace) -> tuple[list[str], list[dict[str, Any]]]:
    """Every provider, each root followed by its tree; with ``--resource``, only those with
    that much free of every class named."""
    listed = ledger.providers()
    views = {uuid: ledger.provider(uuid) for uuid in listed}
    matching = _matching(ledger, views, args)
    rows = []
    for uuid, entry in listed.items():
        view = views[uuid]
        wanted = dict(args.resource)
        if any(rc not in view.classes or view.classes[rc].free < n for rc, n in wanted.items()):
            continue
        if uuid not in matching:
            continue
        usage = {rc: {"used": c.used, "capacity": c.capacity, "free": c.free,
                      "over_capacity": c.over_capacity} for rc, c in view.classes.items()}
        rows.append({"uuid": uuid, "name": entry.name, "parent_uuid": entry.parent_uuid,
                     "root_uuid": entry.root_uuid, "generation": view.generation,
                     "usage": usage, "traits": list(view.traits),
                     "aggregates": list(view.aggregates)})
    order = {uuid: i for i, uuid in enumerate(listed)}
    rows.sort(key=lambda r: (order[str(r["root_uuid"])], r["root_uuid"] != r["uuid"]))
    return ["uuid", "name", "parent_uuid", "generation", "usage"], rows


def _matching(ledger: Ledger, views: dict[str, ProviderView],
              args: argparse.Namespace) -> set[str]:
    """The providers ``--required``, ``--member-of`` and ``--in-tree`` keep (Placement's
    rules: ``domain/provider_filters.py``); every trait named must exist."""
    from allocation_ledger.application.inputs import canonical_uuid
    from allocation_ledger.domain.errors import TraitNotFound
    from allocation_ledger.domain.provider_filters import (
        ProviderFacts,
        ProviderFilter,
        select_providers,
    )

    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in args.required:
        if value.startswith("in:"):
            required.append(frozenset(value[3:].split(",")))
        elif value.startswith("!"):
            forbidden.add(value[1:])
        else:
            required.append(frozenset({value}))
    member_of: list[frozenset[str]] = []
    not_member_of: set[str] = set()
    for value in args.member_of:
        negated = value.startswith("!")
        body = value[1:] if negated else value
        uuids = frozenset(canonical_uuid(u) for u in
                          (body[3:].split(",") if body.startswith("in:") else [body]))
        if negated:
            not_member_of |= uuids
        else:
            member_of.append(uuids)
    wanted = ProviderFilter(required=tuple(required), forbidden=frozenset(forbidden),
                            member_of=tuple(member_of), not_member_of=frozenset(not_member_of),
                            in_tree=canonical_uuid(args.in_tree) if args.in_tree else None)
    unknown = sorted(n for n in wanted.traits_named if not ledger.trait_exists(n))
    if unknown:
        raise TraitNotFound(unknown)
    facts = [ProviderFacts(uuid, v.root_uuid, frozenset(v.traits), frozenset(v.aggregates))
             for uuid, v in views.items()]
    return {f.uuid for f in select_providers(facts, wanted)}


def consumers(ledger: Ledger, args: argparse.Namespace) -> tuple[list[str], list[dict[str, Any]]]:
    """Every consumer holding allocations (instances and migrations), by project and user."""
    rows = []
    for uuid, entry in ledger.consumers().items():
        if args.project and entry.project_id != args.project:
            continue
        if args.user and entry.user_id != args.user:
            continue
        view = ledger.consumer(uuid)
        if view.generation is None:
            continue  # holds nothing: absent, as in Placement
        rows.append({"uuid": uuid, "project_id": entry.project_id, "user_id": entry.user_id,
                     "type": "MIGRATION" if entry.migration else entry.consumer_type,
                     "generation": view.generation, "providers": len(view.allocations)})
    return ["uuid", "project_id", "user_id", "type", "generation", "providers"], rows


def migrations(ledger: Ledger,
               args: argparse.Namespace) -> tuple[list[str], list[dict[str, Any]]]:
    """Migrations in flight (at least ``--stale-after`` old), or all with ``--all``."""
    now = datetime.now(UTC)
    if args.all:
        views = [ledger.migration(uuid) for uuid in ledger.migration_ids()]
        views = [v for v in views if v.age_seconds(now) >= args.stale_after]
    else:
        views = ledger.migrations_in_flight(args.stale_after, now=now)
    rows = [{"uuid": v.migration_uuid, "instance_uuid": v.instance_uuid, "kind": v.kind,
             "status": v.status, "started_at": v.started_at,
             "age_seconds": round(v.age_seconds(now), 1)} for v in views]
    return ["uuid", "instance_uuid", "kind", "status", "started_at", "age_seconds"], rows


LISTERS = {"providers": providers, "consumers": consumers, "migrations": migrations}
