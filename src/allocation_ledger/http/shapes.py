"""Checks of request bodies and query strings, answering 400 as Placement's JSON schemas do.

Only the shape is checked here (keys, JSON types); values (UUIDs, classes, amounts) are the
ledger's own validation, so the rules live in one place.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any
from uuid import UUID

from allocation_ledger.http.errors import HTTPError

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "string": (str,), "integer": (int,), "array": (list,),
    "number": (int, float), "null": (type(None),),
}


def invalid(detail: str, validator: str | None = None, key: str | None = None) -> HTTPError:
    """Placement's 400 for a body its schema refuses; ``validator`` names the JSON schema
    keyword that refused it (of property ``key``), as jsonschema's message does (clients
    and Placement's tests read "Failed validating 'minimum' in schema['properties']...")."""
    where = f"['properties']['{key}']" if key else ""
    failed = f"\n\nFailed validating '{validator}' in schema{where}" if validator else ""
    return HTTPError(400, f"JSON does not validate: {detail}{failed}")


def obj(data: Any, required: Collection[str] = (), allowed: Collection[str] | None = None,
        where: str = "body") -> dict[str, Any]:
    """``data`` as an object with every ``required`` key and no key outside ``allowed``."""
    if not isinstance(data, dict):
        raise invalid(f"{where} must be an object", "type")
    missing = [k for k in required if k not in data]
    if missing:
        raise invalid(f"'{missing[0]}' is a required property of {where}", "required")
    if allowed is not None:
        extra = sorted(k for k in data if k not in allowed and k not in required)
        if extra:
            # jsonschema's words (Placement's gabbits read "'bad_field' was unexpected")
            names = ", ".join(repr(k) for k in extra)
            verb = "was" if len(extra) == 1 else "were"
            raise invalid(f"Additional properties are not allowed ({names} {verb} "
                          f"unexpected) in {where}", "additionalProperties")
    return data


def typed(data: Mapping[str, Any], key: str, *types: str) -> Any:
    """``data[key]`` (``None`` when absent), refused unless it is one of the JSON ``types``."""
    value = data.get(key)
    if key not in data:
        return None
    wanted = tuple(t for name in types for t in _JSON_TYPES[name])
    if not isinstance(value, wanted) or (isinstance(value, bool) and "boolean" not in types):
        raise invalid(f"{value!r} is not of type {' or '.join(repr(t) for t in types)} "
                      f"({key})", "type")
    return value


def text(data: Mapping[str, Any], key: str, max_length: int, min_length: int = 1
         ) -> str | None:
    """``data[key]`` as a string of ``min_length`` to ``max_length`` characters (``None``
    when absent), refused as Placement's schemas refuse it."""
    value = typed(data, key, "string")
    if value is None:
        return None
    if len(value) > max_length:
        raise invalid(f"{value[:40]!r}... is too long ({key}: at most {max_length})",
                      "maxLength")
    if len(value) < min_length:
        raise invalid(f"{value!r} is too short ({key}: at least {min_length})",
                      "minLength")
    return str(value)


def uuid_param(value: str, what: str) -> str:
    """A UUID from a path or query; 400 when it is malformed."""
    try:
        return str(UUID(value))
    except ValueError:
        raise HTTPError(400, f"Malformed {what}: {value}") from None


def _is_uuid(value: str) -> bool:
    try:
        UUID(value)
    except ValueError:
        return False
    return True


def formatted_uuid(data: Mapping[str, Any], key: str, nullable: bool = False) -> str | None:
    """``data[key]`` (``None`` when absent), refused unless it is a string in the format
    ``uuid``, in jsonschema's words (Placement's tests read "Failed validating 'format'")."""
    value = typed(data, key, "string", *(("null",) if nullable else ()))
    if value is not None and not _is_uuid(value):
        raise invalid(f"{value!r} is not a 'uuid'", "format", key)
    return None if value is None else str(value)


def query_uuid(value: str, what: str) -> str:
    """A UUID from a query string, refused as Placement's query schemas refuse it."""
    if not _is_uuid(value):
        raise HTTPError(400, f"Invalid query string parameters: {value!r} is not a 'uuid' "
                             f"({what})")
    return str(UUID(value))


def keys_match(data: Mapping[str, Any], pattern: re.Pattern[str], where: str) -> None:
    """Refuse a key of ``data`` that ``pattern`` does not match, as a JSON schema's
    ``patternProperties`` without additional properties does (jsonschema's words)."""
    for key in data:
        if not pattern.match(key):
            raise invalid(f"{key!r} does not match any of the regexes: "
                          f"'{pattern.pattern}' ({where})", "additionalProperties")


def query(ctx_query: Mapping[str, str], allowed: Collection[str]) -> Mapping[str, str]:
    """The query string, refused (400) when it names a parameter outside ``allowed``."""
    extra = sorted(k for k in ctx_query if k not in allowed)
    if extra:
        raise HTTPError(400, f"Invalid query string parameters: Additional properties are "
                             f"not allowed ({', '.join(extra)})")
    return ctx_query


def bounded(data: Mapping[str, Any], key: str, minimum: float, maximum: float) -> None:
    """Refuse ``data[key]`` (when present) outside ``minimum``..``maximum``, in
    jsonschema's words (Placement's tests read "0 is less than the minimum of 1")."""
    value = data.get(key)
    if value is None:
        return
    if value < minimum:
        raise invalid(f"{value} is less than the minimum of {minimum}", "minimum", key)
    if value > maximum:
        raise invalid(f"{value} is greater than the maximum of {maximum}", "maximum", key)
