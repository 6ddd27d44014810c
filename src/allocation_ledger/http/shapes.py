"""Checks of request bodies and query strings, answering 400 as Placement's JSON schemas do.

Only the shape is checked here (keys, JSON types); values (UUIDs, classes, amounts) are the
ledger's own validation, so the rules live in one place.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any
from uuid import UUID

from allocation_ledger.http.errors import HTTPError

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "string": (str,), "integer": (int,), "array": (list,),
    "number": (int, float), "null": (type(None),),
}


def invalid(detail: str) -> HTTPError:
    """Placement's 400 for a body its schema refuses."""
    return HTTPError(400, f"JSON does not validate: {detail}")


def obj(data: Any, required: Collection[str] = (), allowed: Collection[str] | None = None,
        where: str = "body") -> dict[str, Any]:
    """``data`` as an object with every ``required`` key and no key outside ``allowed``."""
    if not isinstance(data, dict):
        raise invalid(f"{where} must be an object")
    missing = [k for k in required if k not in data]
    if missing:
        raise invalid(f"'{missing[0]}' is a required property of {where}")
    if allowed is not None:
        extra = sorted(k for k in data if k not in allowed and k not in required)
        if extra:
            raise invalid(f"Additional properties are not allowed ({', '.join(extra)} in "
                          f"{where})")
    return data


def typed(data: Mapping[str, Any], key: str, *types: str) -> Any:
    """``data[key]`` (``None`` when absent), refused unless it is one of the JSON ``types``."""
    value = data.get(key)
    if key not in data:
        return None
    wanted = tuple(t for name in types for t in _JSON_TYPES[name])
    if not isinstance(value, wanted) or (isinstance(value, bool) and "boolean" not in types):
        raise invalid(f"{value!r} is not of type {' or '.join(repr(t) for t in types)} "
                      f"({key})")
    return value


def text(data: Mapping[str, Any], key: str, max_length: int, min_length: int = 1
         ) -> str | None:
    """``data[key]`` as a string of ``min_length`` to ``max_length`` characters (``None``
    when absent), refused as Placement's schemas refuse it."""
    value = typed(data, key, "string")
    if value is None:
        return None
    if len(value) > max_length:
        raise invalid(f"{value[:40]!r}... is too long ({key}); Failed validating "
                      f"'maxLength' ({max_length})")
    if len(value) < min_length:
        raise invalid(f"{value!r} is too short ({key}); Failed validating 'minLength' "
                      f"({min_length})")
    return str(value)


def uuid_param(value: str, what: str) -> str:
    """A UUID from a path or query; 400 when it is malformed."""
    try:
        return str(UUID(value))
    except ValueError:
        raise HTTPError(400, f"Malformed {what}: {value}") from None


def query(ctx_query: Mapping[str, str], allowed: Collection[str]) -> Mapping[str, str]:
    """The query string, refused (400) when it names a parameter outside ``allowed``."""
    extra = sorted(k for k in ctx_query if k not in allowed)
    if extra:
        raise HTTPError(400, f"Invalid query string parameters: Additional properties are "
                             f"not allowed ({', '.join(extra)})")
    return ctx_query
