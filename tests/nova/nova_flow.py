"""Drive a Placement endpoint with Nova's own ``SchedulerReportClient`` through a move.

Run with a Python that has ``nova`` installed (``.venv-nova``), as ``python nova_flow.py
ENDPOINT INSTANCE MIGRATION DESTINATION confirm|revert|revert-before-claim``: the steps
Nova's conductor, scheduler and compute take for a resize or cold migration, each through
the report client's own method (``move_allocations`` of the instance to the migration, the
scheduler's ``claim_resources`` of the destination, then ``delete_allocation_for_instance``
of the migration to confirm, or ``move_allocations`` back to revert). Prints each call's
result as one JSON object.
"""

from __future__ import annotations

import json
import sys

from keystoneauth1 import adapter, noauth, session
from nova import context as nova_context
from nova.scheduler.client import report

FLAVOR = {"VCPU": 2, "MEMORY_MB": 512}


def main(endpoint: str, instance: str, migration: str, destination: str, ending: str) -> None:
    placement = adapter.Adapter(session.Session(auth=noauth.NoAuth()),
                                service_type="placement", endpoint_override=endpoint)
    client = report.SchedulerReportClient(adapter=placement)
    ctx = nova_context.get_admin_context()
    done: dict[str, object] = {
        "swap": client.move_allocations(ctx, instance, migration)}
    if ending != "revert-before-claim":
        done["claim"] = client.claim_resources(
            ctx, instance, {"allocations": {destination: {"resources": FLAVOR}}},
            "p", "u", "1.36")
    if ending == "confirm":
        done["confirm"] = client.delete_allocation_for_instance(
            ctx, migration, consumer_type="migration", force=False)
    else:
        done["revert"] = client.move_allocations(ctx, migration, instance)
    done["instance"] = client.get_allocs_for_consumer(ctx, instance)
    print(json.dumps(done))


if __name__ == "__main__":
    main(*sys.argv[1:6])
