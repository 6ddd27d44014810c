"""``/resource_classes``: the standard classes and ``CUSTOM_*`` ones.

The ledger keeps no registry of custom classes: every well-formed ``CUSTOM_*`` name may be
used in an inventory at any time. So a custom class always exists: ``GET`` answers 200,
``PUT`` (1.7) 204, ``POST`` 201; the list shows the standard classes and the custom ones
some inventory uses; ``DELETE`` is refused (409) while an inventory uses the class.
"""

from __future__ import annotations

import re

from allocation_ledger.domain.values import STANDARD_RESOURCE_CLASSES
from allocation_ledger.http import errors, shapes
from allocation_ledger.http.context import Ctx, Reply

_CUSTOM = re.compile(r"^CUSTOM_[A-Z0-9_]+$")


def _entry(name: str) -> dict[str, object]:
    return {"name": name, "links": [{"rel": "self", "href": f"/resource_classes/{name}"}]}


def _custom(name: str) -> str:
    if not _CUSTOM.match(name):
        raise errors.HTTPError(400, f"JSON does not validate: {name!r} does not match "
                                    "'^CUSTOM_[A-Z0-9_]+$'")
    return name


def _in_use(ctx: Ctx) -> set[str]:
    return {u.resource_class for u in ctx.ledger.reads.host_usage()}


def list_classes(ctx: Ctx) -> Reply:
    """``GET /resource_classes``."""
    custom = {rc for rc in _in_use(ctx) if rc.startswith("CUSTOM_")}
    names = sorted(STANDARD_RESOURCE_CLASSES) + sorted(custom)
    return Reply(body={"resource_classes": [_entry(n) for n in names]})


def show_class(ctx: Ctx) -> Reply:
    """``GET /resource_classes/{name}``: 404 for a name that is neither standard nor custom."""
    name = ctx.params["name"]
    if name not in STANDARD_RESOURCE_CLASSES and not _CUSTOM.match(name):
        raise errors.HTTPError(404, f"No such resource class {name}.")
    return Reply(body=_entry(name))


def create_class(ctx: Ctx) -> Reply:
    """``POST /resource_classes``: 201 for a ``CUSTOM_*`` name."""
    data = shapes.obj(ctx.json(), required=("name",), allowed=("name",))
    name = _custom(shapes.typed(data, "name", "string"))
    return Reply(201, None, {"location": f"/resource_classes/{name}"})


def put_class(ctx: Ctx) -> Reply:
    """``PUT /resource_classes/{name}`` (1.7): 204, the class exists already."""
    _custom(ctx.params["name"])
    if not ctx.at_least(1, 7):
        raise errors.HTTPError(400, "the ledger does not rename resource classes")
    return Reply(204, None, {"location": f"/resource_classes/{ctx.params['name']}"})


def delete_class(ctx: Ctx) -> Reply:
    """``DELETE /resource_classes/{name}``: 400 for a standard class, 409 while in use."""
    name = ctx.params["name"]
    if name in STANDARD_RESOURCE_CLASSES:
        raise errors.HTTPError(400, f"Cannot delete standard resource class {name}")
    _custom(name)
    if name in _in_use(ctx):
        raise errors.HTTPError(409, f"Unable to delete resource class {name}: it is in use "
                                    "by an inventory")
    return Reply(204)
