"""The requests Nova's ``SchedulerReportClient`` sends to move an instance, over a
:class:`Client`: ``move_allocations`` (the swap, and the reverse for a revert),
``delete_allocation_for_instance`` of the migration (the confirm) and the scheduler's
destination claim, each as ``nova/scheduler/client/report.py`` builds it (microversion
1.28, ``CONSUMER_GENERATION_VERSION``)."""

from __future__ import annotations

from typing import Any

from tests.http.server import Answer, Client

NOVA = "1.28"


def allocations_of(client: Client, consumer: str) -> dict[str, Any]:
    """``get_allocs_for_consumer``: ``GET /allocations/{consumer}`` at 1.28."""
    answer = client.call("GET", f"/allocations/{consumer}", version=NOVA)
    assert answer.status == 200, answer
    body: dict[str, Any] = answer.body
    return body


def move_allocations(client: Client, source: str, target: str,
                     headers: dict[str, str] | None = None) -> Answer | None:
    """``move_allocations(source, target)``: ``None`` when Nova sends nothing (the target
    holds allocations and the source none: "already moved"), else the ``POST``'s answer."""
    source_alloc = allocations_of(client, source)
    target_alloc = allocations_of(client, target)
    if target_alloc["allocations"] and not source_alloc["allocations"]:
        return None
    new_allocs = {
        source: {"allocations": {}, "project_id": source_alloc["project_id"],
                 "user_id": source_alloc["user_id"],
                 "consumer_generation": source_alloc["consumer_generation"]},
        target: {"allocations": source_alloc["allocations"],
                 "project_id": source_alloc["project_id"],
                 "user_id": source_alloc["user_id"],
                 "consumer_generation": target_alloc.get("consumer_generation")},
    }
    return client.call("POST", "/allocations", new_allocs, NOVA, headers=headers)


def delete_allocation_for_instance(client: Client, uuid: str, force: bool = False,
                                   headers: dict[str, str] | None = None) -> Answer | None:
    """``delete_allocation_for_instance(uuid, force)``: ``DELETE`` when forced, else the
    consumer read and ``PUT`` back with no allocations; ``None`` when it holds nothing."""
    if force:
        return client.call("DELETE", f"/allocations/{uuid}", headers=headers)
    allocations = allocations_of(client, uuid)
    if allocations["allocations"] == {}:
        return None
    allocations["allocations"] = {}
    return client.call("PUT", f"/allocations/{uuid}", allocations, NOVA, headers=headers)


def claim_destination(client: Client, instance: str, destination: str,
                      resources: dict[str, int], project: str, user: str) -> Answer:
    """The scheduler's ``claim_resources`` for the instance, now holding nothing: ``PUT
    /allocations/{instance}`` with ``consumer_generation: null``."""
    return client.call("PUT", f"/allocations/{instance}", {
        "allocations": {destination: {"resources": resources}}, "project_id": project,
        "user_id": user, "consumer_generation": None}, NOVA)
