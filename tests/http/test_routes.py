"""The application's routes: every one of ``ROUTES`` served, the busiest tried first, and no
two overlapping (so the order they are tried in decides nothing but time)."""

from __future__ import annotations

import re

from starlette.routing import Route, compile_path

from allocation_ledger import open_ledger
from allocation_ledger.http.app import FIRST, ROUTES, create_app


def _sample(template: str) -> str:
    """A concrete path the template matches: each parameter a value of its own."""
    return re.sub(r"{([^}]+)}", lambda m: f"sample-{m.group(1)}", template)


def test_every_route_is_served_and_the_busiest_are_tried_first() -> None:
    with open_ledger("memory://") as ledger:
        app = create_app(ledger)
    served = [(r.path, m) for r in app.routes if isinstance(r, Route)
              for m in sorted(r.methods or ()) if m != "HEAD"]
    assert sorted(served) == sorted((path, method) for path, method, *_ in ROUTES)
    assert served[:len(FIRST)] == list(FIRST)


def test_no_two_routes_match_the_same_request() -> None:
    for path, method, *_ in ROUTES:
        request = _sample(path)
        matching = [(p, m) for p, m, *_ in ROUTES
                    if m == method and compile_path(p)[0].match(request)]
        assert matching == [(path, method)], (request, matching)
