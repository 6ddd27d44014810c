"""The filters of ``GET /resource_providers`` read from its query string, per microversion,
with Placement's refusals: ``member_of`` (1.3; several parameters from 1.24, ``!`` from
1.32), ``resources`` (1.4), ``in_tree`` (1.14), ``required`` (1.18; ``!`` from 1.22, ``in:``
and several parameters from 1.39). The rules that apply them are the domain's
(:mod:`allocation_ledger.domain.provider_filters`).
"""

from __future__ import annotations

from uuid import UUID

from allocation_ledger.domain.provider_filters import ProviderFilter
from allocation_ledger.domain.values import is_valid_resource_class
from allocation_ledger.http import errors, shapes
from allocation_ledger.http.context import Ctx

#: The query parameters each version adds.
SINCE = (("member_of", (1, 3)), ("resources", (1, 4)), ("in_tree", (1, 14)),
         ("required", (1, 18)))
_RESOURCES_FORM = ("Badly formed resources parameter. Expected resources query string "
                   "parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: {}.")


def allowed(ctx: Ctx) -> set[str]:
    """The query parameters ``GET /resource_providers`` takes at the request's version."""
    return {"uuid", "name"} | {name for name, since in SINCE if ctx.version >= since}


def parse(ctx: Ctx) -> ProviderFilter | None:
    """The listing's filters (``None`` when it names none); 400 as Placement answers."""
    q = ctx.query
    if not {"member_of", "resources", "in_tree", "required"} & set(q):
        return None
    member_of, not_member_of = _member_of(ctx) if "member_of" in q else ((), frozenset())
    required, forbidden = _required(ctx) if "required" in q else ((), frozenset())
    in_tree = shapes.uuid_param(q["in_tree"], "in_tree") if "in_tree" in q else None
    resources = _resources(q["resources"]) if "resources" in q else {}
    wanted = ProviderFilter(required=required, forbidden=forbidden, member_of=member_of,
                            not_member_of=not_member_of, in_tree=in_tree, resources=resources)
    unknown = sorted(n for n in wanted.traits_named if not ctx.ledger.trait_exists(n))
    if unknown:
        raise errors.HTTPError(400, 'Invalid trait(s) in "required" parameter: No such '
                                    f"trait(s): {', '.join(unknown)}.")
    return wanted


def _values(ctx: Ctx, name: str) -> list[str]:
    return list(ctx.query_lists.get(name) or [ctx.query[name]])


def _member_of(ctx: Ctx) -> tuple[tuple[frozenset[str], ...], frozenset[str]]:
    values = _values(ctx, "member_of")
    if not ctx.at_least(1, 24) and len(values) > 1:
        raise errors.HTTPError(400, "Multiple member_of parameters are not supported")
    groups: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        if "," in value and not value.startswith(("in:", "!in:")):
            raise errors.HTTPError(400, "Multiple values for 'member_of' must be prefixed "
                                        "with the 'in:' or '!in:' keyword using the valid "
                                        f"microversion. Got: {value}")
        negated = value.startswith("!")
        body = value[1:] if negated else value
        members = body[3:].split(",") if body.startswith("in:") else [body]
        uuids = frozenset(_aggregate(m) for m in members)
        if negated:
            if not ctx.at_least(1, 32):
                raise errors.HTTPError(400, "Forbidden member_of parameters are not "
                                            "supported in the specified microversion")
            forbidden |= uuids
        else:
            groups.append(uuids)
    return tuple(groups), frozenset(forbidden)


def _aggregate(value: str) -> str:
    try:
        return str(UUID(value))
    except ValueError:
        raise errors.HTTPError(400, "Invalid query string parameters: Expected 'member_of' "
                                    f"parameter to contain valid UUID(s). Got: {value}"
                               ) from None


def _required(ctx: Ctx) -> tuple[tuple[frozenset[str], ...], frozenset[str]]:
    any_traits = ctx.at_least(1, 39)
    values = _values(ctx, "required")
    if not any_traits:
        values = values[-1:]
    groups: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        if value.startswith("in:"):
            if not any_traits:
                raise errors.HTTPError(400, "Invalid query string parameters: The format "
                                            "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported "
                                            f"since microversion 1.39. Got: {value}")
            names = {n.strip() for n in value[3:].split(",")}
            if not all(names):
                raise errors.HTTPError(400, "Invalid query string parameters: Expected "
                                            "'required' parameter value of the form: "
                                            "in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty "
                                            f"trait in: {value}")
            if any(n.startswith("!") for n in names):
                raise errors.HTTPError(400, "Invalid query string parameters: The format "
                                            "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not "
                                            f"support forbidden traits. Got: {value}")
            groups.append(frozenset(names))
            continue
        names_given = [n.strip() for n in value.split(",")]
        negated = {n[1:] for n in names_given if n.startswith("!")}
        allow_forbidden = ctx.at_least(1, 22)
        form = "HW_CPU_X86_VMX,!CUSTOM_MAGIC" if allow_forbidden else (
            "HW_CPU_X86_VMX,CUSTOM_MAGIC")
        if not all(names_given) or not all(negated):
            raise errors.HTTPError(400, "Invalid query string parameters: Expected 'required' "
                                        f"parameter value of the form: {form}. Got an empty "
                                        f"trait in: {value}")
        if negated and not allow_forbidden:
            raise errors.HTTPError(400, "Invalid query string parameters: Expected 'required' "
                                        "parameter value of the form: HW_CPU_X86_VMX,"
                                        f"CUSTOM_MAGIC. Got: {value}")
        groups += [frozenset({n}) for n in names_given if not n.startswith("!")]
        forbidden |= negated
    return tuple(groups), frozenset(forbidden)


def _resources(value: str) -> dict[str, int]:
    if not value.strip():
        raise errors.HTTPError(400, _RESOURCES_FORM.format("empty string"))
    found: dict[str, int] = {}
    for part in value.split(","):
        pieces = part.split(":")
        if len(pieces) != 2:
            raise errors.HTTPError(400, _RESOURCES_FORM.format(part))
        rc, amount_text = pieces
        try:
            amount = int(amount_text)
        except ValueError:
            raise errors.HTTPError(400, f"Requested resource {rc} expected positive integer "
                                        f"amount. Got: {amount_text}.") from None
        if amount < 1:
            raise errors.HTTPError(400, f"Requested resource {rc} requires amount >= 1. "
                                        f"Got: {amount}.")
        if not is_valid_resource_class(rc):
            raise errors.HTTPError(400, "Invalid resource class in resources parameter: No "
                                        f"such resource class {rc}.")
        found[rc] = amount
    return found
