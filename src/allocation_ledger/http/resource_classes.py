"""``/resource_classes``: the standard classes and the custom (``CUSTOM_*``) ones.

A custom class exists once created (``POST``, or ``PUT`` from 1.7) and until deleted; the
ledger records it as events (``domain/resource_class.py``). A ledger written before classes
were recorded holds inventories of custom classes nobody created: a custom class that some
inventory uses is taken as existing too (listed, shown, refused by ``POST`` as existing, not
deletable while used), so old ledgers read and write as before. ``PUT`` of such a class
records it and answers 204, as for a class that exists.

Whether an inventory uses a class is read from the read side just before the command, so
a class deleted while another request adds an inventory of it can race; Placement's own
check is a read in the same transaction. Renaming (before 1.7) is refused while an
inventory uses the class: Placement renames the class under every inventory and
allocation, which would rewrite every provider that has it.
"""

from __future__ import annotations

import re

from allocation_ledger.domain.values import STANDARD_RESOURCE_CLASSES
from allocation_ledger.http import errors, shapes
from allocation_ledger.http.context import Ctx, Reply

_CUSTOM = re.compile(r"^CUSTOM_[A-Z0-9_]+$")
MAX_NAME = 255


def _entry(name: str) -> dict[str, object]:
    return {"name": name, "links": [{"rel": "self", "href": f"/resource_classes/{name}"}]}


def _location(name: str) -> dict[str, str]:
    return {"location": f"/resource_classes/{name}"}


def _custom(name: object) -> str:
    """A custom class name as Placement's schema allows it, else its 400."""
    if not isinstance(name, str):
        raise shapes.invalid(f"{name!r} is not of type 'string' (name)", "type")
    if len(name) > MAX_NAME:
        raise shapes.invalid(f"{name[:40]!r}... is too long (name: at most {MAX_NAME})",
                             "maxLength")
    if not _CUSTOM.match(name):
        raise shapes.invalid(f"{name!r} does not match '^CUSTOM_[A-Z0-9_]+$'", "pattern")
    return name


def in_use(ctx: Ctx) -> set[str]:
    """The classes some provider's inventory names."""
    return {u.resource_class for u in ctx.ledger.reads.host_usage()}


def may_exist(name: str) -> bool:
    """True for a standard class or a well-formed custom name (no read needed)."""
    return name in STANDARD_RESOURCE_CLASSES or (
        bool(_CUSTOM.match(name)) and len(name) <= MAX_NAME)


def exists(ctx: Ctx, name: str) -> bool:
    """True for a standard class, a custom class created and not deleted, or a custom
    class some inventory uses (an old ledger's)."""
    if name in STANDARD_RESOURCE_CLASSES:
        return True
    if not _CUSTOM.match(name) or len(name) > MAX_NAME:
        return False
    return ctx.ledger.resource_class_exists(name) or name in in_use(ctx)


def check_known(ctx: Ctx, provider_uuid: str, classes: set[str]) -> None:
    """Refuse (400) an inventory of a custom class that does not exist; a class already
    on the provider is let through (it exists by the rule above)."""
    for rc in sorted(classes):
        if not exists(ctx, rc):
            raise errors.HTTPError(400, f"Unknown resource class in inventory for resource "
                                        f"provider {provider_uuid}: No such resource class "
                                        f"{rc}.")


def _not_found(name: str) -> errors.HTTPError:
    return errors.HTTPError(404, f"No such resource class {name}.")


def list_classes(ctx: Ctx) -> Reply:
    """``GET /resource_classes``: the standard classes, then the custom ones."""
    custom = {rc for rc in in_use(ctx) if rc.startswith("CUSTOM_")}
    custom |= set(ctx.ledger.resource_classes())
    names = sorted(STANDARD_RESOURCE_CLASSES) + sorted(custom)
    return Reply(body={"resource_classes": [_entry(n) for n in names]})


def show_class(ctx: Ctx) -> Reply:
    """``GET /resource_classes/{name}``: 404 for a class that does not exist."""
    name = ctx.params["name"]
    if not exists(ctx, name):
        raise _not_found(name)
    return Reply(body=_entry(name))


def create_class(ctx: Ctx) -> Reply:
    """``POST /resource_classes``: 201, or 409 when the class exists."""
    data = shapes.obj(ctx.json(), required=("name",), allowed=("name",))
    name = _custom(data["name"])
    if name in in_use(ctx):
        raise errors.HTTPError(409, f"Conflicting resource class already exists: {name}")
    ctx.ledger.create_resource_class(name, **ctx.write())
    return Reply(201, None, _location(name))


def put_class(ctx: Ctx) -> Reply:
    """``PUT /resource_classes/{name}``: from 1.7 create it (201) or find it there (204);
    before 1.7 rename it to the body's ``name`` (200)."""
    name = ctx.params["name"]
    if not ctx.at_least(1, 7):
        return _rename(ctx, name)
    _custom(name)
    existed = name in in_use(ctx)
    created = ctx.ledger.create_resource_class(name, exist_ok=True, **ctx.write())
    return Reply(201 if created and not existed else 204, None, _location(name))


def _rename(ctx: Ctx, name: str) -> Reply:
    data = shapes.obj(ctx.json(), required=("name",), allowed=("name",))
    new_name = _custom(data["name"])
    if name in STANDARD_RESOURCE_CLASSES:
        raise errors.HTTPError(400, f"Cannot update standard resource class {name}")
    if not exists(ctx, name):
        raise _not_found(name)
    used = in_use(ctx)
    if exists(ctx, new_name):
        raise errors.HTTPError(409, f"Resource class already exists: {new_name}")
    if name in used:
        raise errors.HTTPError(409, f"Cannot rename resource class {name}: it is in use in "
                                    "inventory (the ledger does not rename inventories)")
    ctx.ledger.rename_resource_class(name, new_name, **ctx.write())
    return Reply(200, _entry(new_name))


def delete_class(ctx: Ctx) -> Reply:
    """``DELETE /resource_classes/{name}``: 400 for a standard class, 404 for one that does
    not exist, 409 while an inventory uses it."""
    name = ctx.params["name"]
    if name in STANDARD_RESOURCE_CLASSES:
        raise errors.HTTPError(400, f"Error in delete resource class: Cannot delete standard "
                                    f"resource class {name}.")
    if name in in_use(ctx):
        raise errors.HTTPError(409, f"Error in delete resource class: Cannot delete resource "
                                    f"class {name}. Class is in use in inventory.")
    if not _CUSTOM.match(name) or not ctx.ledger.resource_class_exists(name):
        raise _not_found(name)
    ctx.ledger.delete_resource_class(name, **ctx.write())
    return Reply(204)
