"""The application factory: every route, its handler and the version it starts at."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, compile_path

from allocation_ledger.application.ledger import Ledger
from allocation_ledger.http import (
    aggregates,
    allocation_candidates,
    allocations,
    errors,
    inventories,
    ledger_routes,
    metrics_route,
    microversion,
    observe,
    providers,
    reshaper,
    resource_classes,
    root,
    traits,
    usages,
)
from allocation_ledger.http.auth import Guard, Tokens
from allocation_ledger.http.context import REQUEST_ID, Reply, Responder, endpoint, request_id_of
from allocation_ledger.http.context import respond as _respond
from allocation_ledger.http.cors import Cors, CorsSettings
from allocation_ledger.http.limits import MAX_BODY

if TYPE_CHECKING:
    from allocation_ledger.http.policy import Policy
    from allocation_ledger.metrics import LedgerMetrics

RP = "/resource_providers/{uuid}"
# Placement answers 404 before a handler's first version, except these (405).
TOO_EARLY_405 = {inventories.delete_inventories}
# Writes without a body: PUT /traits/{name} creates the trait its path names, and so does
# PUT /resource_classes/{name} from 1.7 (before 1.7 it renames, and the handler's read of
# its body checks the media type then).
NO_BODY = {resource_classes.put_class, traits.put_trait}

# path, method, handler, first microversion
ROUTES: tuple[tuple[str, str, Responder, microversion.Version], ...] = (
    ("/", "GET", root.home, (1, 0)),
    ("/resource_providers", "GET", providers.list_providers, (1, 0)),
    ("/resource_providers", "POST", providers.create_provider, (1, 0)),
    (RP, "GET", providers.show_provider, (1, 0)),
    (RP, "PUT", providers.update_provider, (1, 0)),
    (RP, "DELETE", providers.delete_provider, (1, 0)),
    (RP + "/inventories", "GET", inventories.list_inventories, (1, 0)),
    (RP + "/inventories", "PUT", inventories.set_inventories, (1, 0)),
    (RP + "/inventories", "POST", inventories.create_inventory, (1, 0)),
    (RP + "/inventories", "DELETE", inventories.delete_inventories, (1, 5)),
    (RP + "/inventories/{resource_class}", "GET", inventories.show_inventory, (1, 0)),
    (RP + "/inventories/{resource_class}", "PUT", inventories.update_inventory, (1, 0)),
    (RP + "/inventories/{resource_class}", "DELETE", inventories.delete_inventory, (1, 0)),
    (RP + "/usages", "GET", usages.provider_usages, (1, 0)),
    (RP + "/allocations", "GET", allocations.provider_allocations, (1, 0)),
    ("/usages", "GET", usages.total_usages, (1, 9)),
    ("/allocations", "POST", allocations.post_allocations, (1, 13)),
    ("/allocations/{consumer_uuid}", "GET", allocations.show_allocations, (1, 0)),
    ("/allocations/{consumer_uuid}", "PUT", allocations.put_allocations, (1, 0)),
    ("/allocations/{consumer_uuid}", "DELETE", allocations.delete_allocations, (1, 0)),
    ("/resource_classes", "GET", resource_classes.list_classes, (1, 2)),
    ("/resource_classes", "POST", resource_classes.create_class, (1, 2)),
    ("/resource_classes/{name}", "GET", resource_classes.show_class, (1, 2)),
    ("/resource_classes/{name}", "PUT", resource_classes.put_class, (1, 2)),
    ("/resource_classes/{name}", "DELETE", resource_classes.delete_class, (1, 2)),
    ("/traits", "GET", traits.list_traits, (1, 6)),
    ("/traits/{name}", "GET", traits.show_trait, (1, 6)),
    ("/traits/{name}", "PUT", traits.put_trait, (1, 6)),
    ("/traits/{name}", "DELETE", traits.delete_trait, (1, 6)),
    (RP + "/traits", "GET", traits.provider_traits, (1, 6)),
    (RP + "/traits", "PUT", traits.set_provider_traits, (1, 6)),
    (RP + "/traits", "DELETE", traits.delete_provider_traits, (1, 6)),
    (RP + "/aggregates", "GET", aggregates.provider_aggregates, (1, 1)),
    (RP + "/aggregates", "PUT", aggregates.set_provider_aggregates, (1, 1)),
    ("/allocation_candidates", "GET", allocation_candidates.list_candidates, (1, 10)),
    ("/reshaper", "POST", reshaper.reshape, (1, 30)),
    *ledger_routes.ROUTES,
)


# Starlette tries routes in order, a regular expression each: the requests a compute service
# sends most (claims and moves, candidates, its provider tree) are tried first. No two
# routes overlap, so the order changes nothing but the time to find one.
FIRST = (("/allocations/{consumer_uuid}", "PUT"), ("/allocations", "POST"),
         ("/allocation_candidates", "GET"), ("/allocations/{consumer_uuid}", "GET"),
         ("/resource_providers", "GET"), (RP + "/inventories", "PUT"))


def _tried_first(route: tuple[str, str, Responder, microversion.Version]) -> int:
    path, method, *_ = route
    return FIRST.index((path, method)) if (path, method) in FIRST else len(FIRST)


def create_app(ledger: Ledger, tokens: Guard | None = None,
               max_body: int = MAX_BODY, metrics: LedgerMetrics | None = None,
               policy: Policy | None = None, cors: CorsSettings | None = None,
               lifespan: Any = None) -> Starlette:
    """A Placement-compatible ASGI application over ``ledger`` (opened with its read side:
    listing providers, a provider's allocations and project usages read the projections);
    request bodies of at most ``max_body`` bytes. Every request is logged on
    ``allocation_ledger.access``; with ``metrics`` (``allocation_ledger.metrics.instrument``
    of the ledger's store) its latency is observed there and ``GET /metrics`` serves them
    (see ``http/observe.py`` and ``http/metrics_route.py``). With a ``policy`` every
    route but the root checks Placement's rule for it (``http/policy_rules.py``; the
    ledger's own routes ``admin_api``) against the caller ``tokens`` identifies. With
    ``cors``, cross-origin requests are answered as Placement's ``[cors]`` options make it
    (``http/cors.py``). ``lifespan``: Starlette's, run as the server starts and stops.
    """
    tokens = tokens or Tokens(None)
    routes = [Route(path, endpoint(ledger, tokens, _checked(policy, handler, method, path),
                                   since,
                                   405 if handler in TOO_EARLY_405 else 404, max_body,
                                   method in ("PUT", "POST") and handler not in NO_BODY),
                    methods=[method])
              for path, method, handler, since in sorted(ROUTES, key=_tried_first)]
    requests = None
    if metrics is not None:
        from allocation_ledger.metrics import RequestMetrics

        requests = RequestMetrics(metrics.registry)
        exposition = metrics.exposition_bytes
        routes.append(Route(metrics_route.PATH,
                            metrics_route.metrics_endpoint(tokens, exposition),
                            methods=["GET"]))
    templates = observe.Templates([path for path, *_ in ROUTES] + [metrics_route.PATH])
    middleware = [Middleware(Cors, settings=cors)] if cors is not None else []
    middleware.append(Middleware(observe.Observed, templates=templates, requests=requests))
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_exception},
                     middleware=middleware, lifespan=lifespan)


def _checked(policy: Policy | None, handler: Responder, method: str, path: str) -> Responder:
    """``handler`` behind its policy rule, when the server enforces one."""
    if policy is None or path == "/":
        return handler
    from allocation_ledger.http.policy import guarded
    from allocation_ledger.http.policy_rules import rule_for

    return guarded(policy, handler, rule_for(method, path) or "admin_api")


async def _http_exception(request: Request, exc: Exception) -> Response:
    """Unknown routes (404) and methods (405) in Placement's error document."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    request_id = request_id_of(request.headers.get(REQUEST_ID))
    err = errors.HTTPError(status, str(getattr(exc, "detail", "")) or "error")
    headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else {}
    if status == 404:  # webob's words, which Placement answers an unknown path with
        err = errors.HTTPError(404, "The resource could not be found.")
    if status == 405:  # every method the path serves, not only those of one route
        headers = {k: v for k, v in headers.items() if k.lower() != "allow"}
        headers["allow"] = ", ".join(allowed_methods(request.url.path))
        err = errors.HTTPError(405, f"The method {request.method} is not allowed for this "
                                    "resource.")
    return _respond(Reply(status, errors.body(err, request_id), headers), microversion.MIN,
                    request_id, accept=request.headers.get("accept"))


_PATHS = [(compile_path(path)[0], method) for path, method, _, _ in ROUTES]
_PATHS.append((compile_path(metrics_route.PATH)[0], "GET"))  # when the server has metrics


def allowed_methods(path: str) -> list[str]:
    """The methods some route serves at ``path``, in the order of :data:`ROUTES`."""
    found = [method for pattern, method in _PATHS if pattern.match(path)]
    return list(dict.fromkeys(found))
