"""``GET /``: the version document clients discover the microversion range from."""

from __future__ import annotations

from allocation_ledger.http import microversion
from allocation_ledger.http.context import Ctx, Reply


def home(ctx: Ctx) -> Reply:
    """Placement's single version, CURRENT, with its min and max microversion."""
    low, high = microversion.text(microversion.MIN), microversion.text(microversion.MAX)
    return Reply(body={"versions": [{
        "id": f"v{low}", "max_version": high, "min_version": low, "status": "CURRENT",
        "links": [{"rel": "self", "href": ""}],
    }]})
