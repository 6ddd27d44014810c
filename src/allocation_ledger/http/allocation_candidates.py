"""``GET /allocation_candidates`` (1.10 on): the query parsed as Placement parses it
(``candidates_query``), the candidates from the ledger, the answer shaped per microversion
as Placement's ``handlers/allocation_candidate.py`` shapes it:

- ``allocation_requests``: before 1.12 each ``allocations`` is a list of
  ``{"resource_provider": {"uuid"}, "resources"}``; from 1.12 an object keyed by provider
  UUID of ``{"resources"}``; from 1.34 each candidate also has ``mappings`` (group suffix ->
  provider UUIDs);
- ``provider_summaries``: provider UUID -> ``{"resources": {class: {capacity, used}}}``,
  only the requested classes before 1.27 and every class of the provider from 1.27;
  ``traits`` from 1.17; ``parent_provider_uuid`` and ``root_provider_uuid`` from 1.29.

**Order and limit.** Placement answers in an arbitrary order (or a random one with
``[placement] randomize_allocation_candidates``) and ``limit`` keeps the first N of it.
The ledger never randomises: candidates come in a stable order (anchor tree roots by UUID,
then the groups' providers by UUID, see ``domain/candidates.py``) and ``limit`` keeps the
first N of that order.
"""

from __future__ import annotations

from email.utils import formatdate
from typing import Any

from allocation_ledger.domain.candidates_request import (
    AllocationRequest,
    Candidates,
    CandidatesRequest,
    NoSuchResourceClass,
    NoSuchTraits,
)
from allocation_ledger.http import candidates_query
from allocation_ledger.http.context import Ctx, Reply
from allocation_ledger.http.errors import HTTPError
from allocation_ledger.http.microversion import Version


def list_candidates(ctx: Ctx) -> Reply:
    """``GET /allocation_candidates``."""
    items = ctx.query_items or tuple(ctx.query.items())
    request = candidates_query.parse(ctx.version, items)
    try:
        found = ctx.ledger.allocation_candidates(request)
    except NoSuchResourceClass as err:
        raise HTTPError(400, "Invalid resource class in resources parameter: "
                             f"{err.message}") from None
    except NoSuchTraits as err:
        raise HTTPError(400, err.message) from None
    headers = {}
    if ctx.at_least(1, 15):
        headers = {"cache-control": "no-cache", "last-modified": formatdate(usegmt=True)}
    return Reply(body=shape(ctx.version, request, found), headers=headers)


def shape(version: Version, request: CandidatesRequest, found: Candidates) -> dict[str, Any]:
    """The answer's body at microversion ``version``."""
    return {"allocation_requests": [_request(version, a) for a in found.allocation_requests],
            "provider_summaries": _summaries(version, request, found)}


def _request(version: Version, areq: AllocationRequest) -> dict[str, Any]:
    if version < (1, 12):
        return {"allocations": [{"resource_provider": {"uuid": rp}, "resources": res}
                                for rp, res in areq.allocations.items()]}
    body: dict[str, Any] = {"allocations": {rp: {"resources": res}
                                            for rp, res in areq.allocations.items()}}
    if version >= (1, 34):
        body["mappings"] = {suffix: list(rps) for suffix, rps in areq.mappings.items()}
    return body


def _summaries(version: Version, request: CandidatesRequest,
               found: Candidates) -> dict[str, Any]:
    every_class = version >= (1, 27)
    asked = {rc for g in request.groups for rc in g.resources}
    body: dict[str, Any] = {}
    for s in found.provider_summaries:
        entry: dict[str, Any] = {"resources": {
            rc: {"capacity": r.capacity, "used": r.used} for rc, r in s.resources.items()
            if every_class or rc in asked}}
        if version >= (1, 17):
            # Placement lists them by id: the standard ones (synced at start) before the
            # custom ones (created later); the standard ones among themselves in an order
            # that varies between its processes, by name here
            entry["traits"] = sorted(s.traits, key=lambda t: (t.startswith("CUSTOM_"), t))
        if version >= (1, 29):
            entry["parent_provider_uuid"] = s.parent_uuid
            entry["root_provider_uuid"] = s.root_uuid
        body[s.uuid] = entry
    return body
