"""The ``GET /allocation_candidates`` query string, parsed as Placement 16 parses it.

Checks run in Placement's order, each with its 400 text: the query schema of the
microversion (``schemas/allocation_candidate.py``), the request-wide parameters
(``lib.RequestWideParams.from_request``), the request groups
(``lib.RequestGroup.dict_from_request`` and ``util.normalize_*``), then ``group_policy``.
The schema texts follow ``jsonschema``'s messages, which Placement quotes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from uuid import UUID

from allocation_ledger.domain.candidates_request import (
    CandidatesRequest,
    GroupPolicy,
    RequestGroup,
)
from allocation_ledger.http.errors import HTTPError
from allocation_ledger.http.microversion import Version

Items = Sequence[tuple[str, str]]

_NUMBERED = r"[1-9][0-9]*"
_NAMED = r"[a-zA-Z0-9_-]{1,64}"
_PREFIXES = ("resources", "required", "member_of", "in_tree")
_LIMIT = re.compile(r"^[1-9][0-9]*$")
_POLICIES = ("none", "isolate")
# Placement's error codes for these query errors (placement/errors.py)
BAD_VALUE = "placement.query.bad_value"
MISSING_VALUE = "placement.query.missing_value"
DUPLICATE_KEY = "placement.query.duplicate_key"


def parse(version: Version, items: Items) -> CandidatesRequest:
    """The request a query string asks for at ``version``; :class:`HTTPError` 400 with
    Placement's text when it is malformed."""
    _check_schema(version, items)
    limit = _first(items, "limit")
    policy = _first(items, "group_policy")
    required, forbidden = _root_required(items)
    same_subtrees = _same_subtrees(items)
    groups = _groups(version, items, same_subtrees)
    if policy is None and sum(g.use_same_provider for g in groups) > 1:
        raise HTTPError(400, 'The "group_policy" parameter is required when specifying '
                             'more than one "resources{N}" parameter.')
    group_policy: GroupPolicy | None = "isolate" if policy == "isolate" else (
        "none" if policy == "none" else None)
    return CandidatesRequest(
        groups=tuple(groups), group_policy=group_policy, same_subtrees=same_subtrees,
        root_required=required, root_forbidden=forbidden,
        limit=int(limit) if limit is not None else None,
        nested_aware=version >= (1, 29))


def _first(items: Items, name: str) -> str | None:
    return next((v for k, v in items if k == name), None)


def _all(items: Items, name: str) -> list[str]:
    return [v for k, v in items if k == name]


# -- the schema of each microversion ---------------------------------------------------------


def _schema_invalid(message: str, keyword: str = "", name: str = "",
                    value: str = "") -> HTTPError:
    """jsonschema's text for a refused query, as Placement quotes it."""
    detail = f"Invalid query string parameters: {message}"
    if keyword:
        detail += (f"\n\nFailed validating {keyword!r} in schema['properties'][{name!r}]"
                   f"\n\nOn instance[{name!r}]:\n    {value!r}")
    return HTTPError(400, detail)


def _key_pattern(version: Version) -> re.Pattern[str] | None:
    """The suffixed keys a version accepts (``None``: none, before 1.25)."""
    if version < (1, 25):
        return None
    prefixes = _PREFIXES if version >= (1, 31) else _PREFIXES[:3]
    suffix = _NAMED if version >= (1, 33) else _NUMBERED
    return re.compile(rf"^({'|'.join(prefixes)})({suffix})?$")


def _plain_keys(version: Version) -> list[str]:
    keys = ["resources"] if version < (1, 25) else ["group_policy"]
    keys += ["limit"] if version >= (1, 16) else []
    keys += ["required"] if (1, 17) <= version < (1, 25) else []
    keys += ["member_of"] if (1, 21) <= version < (1, 25) else []
    keys += ["root_required"] if version >= (1, 35) else []
    keys += ["same_subtree"] if version >= (1, 36) else []
    return keys


def _check_schema(version: Version, items: Items) -> None:
    given = dict(items)  # the last value of each name, as Placement validates
    if version < (1, 25) and "resources" not in given:
        raise _schema_invalid("'resources' is a required property")
    plain = _plain_keys(version)
    pattern = _key_pattern(version)
    extra = sorted(k for k in given if k not in plain
                   and not (pattern is not None and pattern.match(k)))
    if extra and pattern is None:
        names = ", ".join(repr(k) for k in extra)
        raise _schema_invalid(f"Additional properties are not allowed ({names} "
                              f"{'was' if len(extra) == 1 else 'were'} unexpected)")
    if extra and pattern is not None:
        prefixes = _PREFIXES if version >= (1, 31) else _PREFIXES[:3]
        suffix = _NAMED if version >= (1, 33) else _NUMBERED
        regexes = ", ".join(repr(f"^{p}({suffix})?$") for p in sorted(prefixes))
        raise _schema_invalid(f"{', '.join(repr(k) for k in extra)} "
                              f"{'does' if len(extra) == 1 else 'do'} not match any of "
                              f"the regexes: {regexes}")
    if "limit" in given and not _LIMIT.match(given["limit"]):
        raise _schema_invalid(f"{given['limit']!r} does not match '^[1-9][0-9]*$'",
                              "pattern", "limit", given["limit"])
    if "group_policy" in given and given["group_policy"] not in _POLICIES:
        raise _schema_invalid(f"{given['group_policy']!r} is not one of ['none', 'isolate']",
                              "enum", "group_policy", given["group_policy"])


# -- request-wide parameters ------------------------------------------------------------------


def _root_required(items: Items) -> tuple[frozenset[str], frozenset[str]]:
    values = _all(items, "root_required")
    if not values:
        return frozenset(), frozenset()
    if len(values) > 1:
        raise HTTPError(400, "Query parameter 'root_required' may be specified only once.",
                        DUPLICATE_KEY)
    any_of, forbidden = _traits(values[0], allow_forbidden=True, allow_any=False)
    required = frozenset(t for names in any_of for t in names)
    conflicts = sorted(required & forbidden)
    if conflicts:
        raise HTTPError(400, "Conflicting required and forbidden traits found in "
                             f"root_required: {', '.join(conflicts)}", BAD_VALUE)
    return required, forbidden


def _same_subtrees(items: Items) -> tuple[frozenset[str], ...]:
    found = []
    for value in _all(items, "same_subtree"):
        suffixes = frozenset(s.strip() for s in value.split(","))
        if "" in suffixes:
            raise HTTPError(400, "Empty string (unsuffixed group) can not be specified in "
                                 "`same_subtree` ", BAD_VALUE)
        found.append(suffixes)
    return tuple(found)


# -- request groups ---------------------------------------------------------------------------


def _groups(version: Version, items: Items,
            same_subtrees: tuple[frozenset[str], ...]) -> list[RequestGroup]:
    pattern = re.compile(rf"^({'|'.join(_PREFIXES)})"
                         rf"({_NAMED if version >= (1, 33) else _NUMBERED})?$")
    fields: dict[str, dict[str, object]] = {}
    for key, value in items:
        match = pattern.match(key)
        if match is None:
            continue
        prefix, suffix = match.group(1), match.group(2) or ""
        group = fields.setdefault(suffix, {"suffix": suffix})
        if prefix == "resources":
            group["resources"] = _resources(value)
        elif prefix == "required":
            group["required"], group["forbidden"] = _required(version, items, suffix)
        elif prefix == "member_of":
            group["member_of"], group["forbidden_aggregates"] = _member_of(
                version, items, suffix)
        else:
            group["in_tree"] = _uuid_like(value.strip(), "in_tree", value)
    groups = [RequestGroup(**g) for g in fields.values()]  # type: ignore[arg-type]
    if version >= (1, 36):
        _check_resourceless(groups, same_subtrees)
    else:
        _check_orphans(groups)
    if version >= (1, 22):
        _check_conflicts(groups)
    return groups


def _resources(value: str) -> dict[str, int]:
    form = ("Badly formed resources parameter. Expected resources query string parameter "
            "in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: ")
    if value.strip() == "":
        raise HTTPError(400, form + "empty string.")
    found: dict[str, int] = {}
    for pair in value.split(","):
        words = pair.split(":")
        if len(words) != 2:
            raise HTTPError(400, f"{form}{pair}.")
        rc, text = words
        try:
            amount = int(text)
        except ValueError:
            raise HTTPError(400, f"Requested resource {rc} expected positive integer amount. "
                                 f"Got: {text}.") from None
        if amount < 1:
            raise HTTPError(400, f"Requested resource {rc} requires amount >= 1. "
                                 f"Got: {amount}.")
        found[rc] = amount
    return found


def _required(version: Version, items: Items,
              suffix: str) -> tuple[tuple[frozenset[str], ...], frozenset[str]]:
    values = _all(items, "required" + suffix)
    any_traits = version >= (1, 39)
    if not any_traits:
        values = values[-1:]  # before 1.39 the last one counts
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        r, f = _traits(value, allow_forbidden=version >= (1, 22), allow_any=any_traits)
        required += r
        forbidden |= f
    return tuple(required), frozenset(forbidden)


def _traits(value: str, *, allow_forbidden: bool,
            allow_any: bool) -> tuple[list[frozenset[str]], frozenset[str]]:
    """``util.normalize_traits_qs_param``: ``A,!B`` or (1.39) ``in:A,B``."""
    bad = "Invalid query string parameters: "
    if value.startswith("in:"):
        if not allow_any:
            raise HTTPError(400, f"{bad}The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only "
                                 f"supported since microversion 1.39. Got: {value}")
        names = frozenset(s.strip() for s in value[3:].split(","))
        if not all(names):
            raise HTTPError(400, f"{bad}Expected 'required' parameter value of the form: "
                                 f"in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: "
                                 f"{value}")
        if any(n.startswith("!") for n in names):
            raise HTTPError(400, f"{bad}The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does "
                                 f"not support forbidden traits. Got: {value}")
        return [names], frozenset()
    names_ = [s.strip() for s in value.split(",")]
    forbidden = frozenset(n.lstrip("!") for n in names_ if n.startswith("!"))
    if not all(names_) or not all(forbidden):
        form = "HW_CPU_X86_VMX,!CUSTOM_MAGIC" if allow_forbidden else \
            "HW_CPU_X86_VMX,CUSTOM_MAGIC"
        raise HTTPError(400, f"{bad}Expected 'required' parameter value of the form: "
                             f"{form}. Got an empty trait in: {value}")
    if forbidden and not allow_forbidden:
        raise HTTPError(400, f"{bad}Expected 'required' parameter value of the form: "
                             f"HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}")
    return [frozenset({n}) for n in names_ if not n.startswith("!")], forbidden


def _member_of(version: Version, items: Items,
               suffix: str) -> tuple[tuple[frozenset[str], ...], frozenset[str]]:
    values = _all(items, "member_of" + suffix)
    if version < (1, 24) and len(values) > 1:
        raise HTTPError(400, f"Multiple member_of{suffix} parameters are not supported")
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        if "," in value and not value.startswith(("in:", "!in:")):
            raise HTTPError(400, "Multiple values for 'member_of' must be prefixed with the "
                                 "'in:' or '!in:' keyword using the valid microversion. "
                                 f"Got: {value}")
        negated = value.startswith("!")
        body = value[1:] if negated else value
        names = body[3:].split(",") if body.startswith("in:") else [body]
        uuids = frozenset(_uuid_like(n, "member_of", n) for n in names)
        if negated:
            if version < (1, 32):
                raise HTTPError(400, f"Forbidden member_of{suffix} parameters are not "
                                     "supported in the specified microversion")
            forbidden |= uuids
        else:
            required.append(uuids)
    return tuple(required), frozenset(forbidden)


def _uuid_like(value: str, name: str, shown: str) -> str:
    """The canonical form of a UUID Placement's ``is_uuid_like`` accepts; its 400 else."""
    try:
        return str(UUID(value))
    except ValueError:
        pass
    if name == "in_tree":
        raise HTTPError(400, "Invalid query string parameters: Expected 'in_tree' parameter "
                             f"to be a format of uuid. Got: {shown}")
    raise HTTPError(400, "Invalid query string parameters: Expected 'member_of' parameter to "
                         f"contain valid UUID(s). Got: {shown}")


def _check_resourceless(groups: list[RequestGroup],
                        same_subtrees: tuple[frozenset[str], ...]) -> None:
    resourceless = [g.suffix for g in groups if not g.resources]
    if len(resourceless) == len(groups):
        raise HTTPError(400, "There must be at least one resources or resources[$S] "
                             "parameter.", MISSING_VALUE)
    in_subtrees = set().union(*same_subtrees)
    bad = sorted(s for s in resourceless if s not in in_subtrees)
    if bad:
        raise HTTPError(400, "Resourceless suffixed group request should be specified in "
                             f"`same_subtree` query param: bad group(s) - {bad}.", BAD_VALUE)
    suffixes = [g.suffix for g in groups]
    unknown = sorted(s for s in in_subtrees if s not in suffixes)
    if unknown:
        raise HTTPError(400, f"Real suffixes should be specified in `same_subtree`: "
                             f"{unknown} not found in {suffixes}.", BAD_VALUE)


def _check_orphans(groups: list[RequestGroup]) -> None:
    orphans = [f"required{g.suffix}" for g in groups if g.required and not g.resources]
    if orphans:
        raise HTTPError(400, "All traits parameters must be associated with resources.  "
                             "Found the following orphaned traits keys: "
                             + ", ".join(orphans))
    orphans = [f"member_of{g.suffix}" for g in groups if not g.resources
               and (g.member_of or g.forbidden_aggregates)]
    if orphans:
        raise HTTPError(400, "All member_of parameters must be associated with resources. "
                             "Found the following orphaned member_of keys: "
                             + ", ".join(orphans))
    if not all(g.resources for g in groups):
        raise HTTPError(400, "All request groups must specify resources.")
    if not groups:
        raise HTTPError(400, "At least one request group (`resources` or `resources{$S}`) "
                             "is required.")


def _check_conflicts(groups: list[RequestGroup]) -> None:
    conflicts = sorted(f"required{g.suffix}: ({', '.join(sorted(any_of))})"
                       for g in groups for any_of in g.required if any_of <= g.forbidden)
    if conflicts:
        raise HTTPError(400, "Conflicting required and forbidden traits found in the "
                             f"following traits keys: {', '.join(conflicts)}")
