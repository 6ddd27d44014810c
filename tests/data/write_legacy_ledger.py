"""Write ``legacy_ledger.jsonl``: a small ledger as the code before issue 17 stored it.

The file was written by commit 773432f (before destination records stopped counting in a
migration's generation) with::

    git archive 773432f src | tar -x -C /tmp/legacy
    PYTHONPATH=/tmp/legacy/src:. .venv/bin/python tests/data/write_legacy_ledger.py

It holds every kind of move, finished and in flight, with devices: a resize confirmed, a
cold migration reverted, a same-host resize with vPMEM namespaces waiting for confirmation
(its migration then read generation 2), a live migration waiting (1 then), and an
evacuation in flight. ``tests/audit/test_legacy_ledger.py`` loads it into every store kind.
Its ids are fixed so the test can name them; one JSON object per stored event.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from allocation_ledger import open_ledger

HOSTS = [f"00000000-0000-4000-8000-00000000000{i}" for i in range(1, 4)]
VMS = [f"00000000-0000-4000-8000-0000000001{i:02}" for i in range(1, 6)]
MIGRATIONS = [f"00000000-0000-4000-8000-0000000002{i:02}" for i in range(1, 6)]
SMALL = {"VCPU": 1, "MEMORY_MB": 512}
BIG = {"VCPU": 2, "MEMORY_MB": 1024}
PMEM = "CUSTOM_PMEM_NAMESPACE_4GB"
OUT = Path(__file__).with_name("legacy_ledger.jsonl")


def main() -> None:
    """Write the ledger through the service API, then dump its stored events."""
    with open_ledger("memory://") as ledger:
        for i, host in enumerate(HOSTS):
            ledger.register_provider(host, f"legacy-{i}", inventories={
                "VCPU": {"total": 8}, "MEMORY_MB": {"total": 8192}})
        ledger.set_devices(HOSTS[0], PMEM, ["ns0", "ns1", "ns2"],
                           ledger.provider(HOSTS[0]).generation)

        def spawn(vm: str, allocations: dict[str, dict[str, int]]) -> None:
            ledger.claim(vm, allocations, None, project_id="p", user_id="u")

        def moved(vm: str, mig: str, kind: str, dest: dict[str, dict[str, int]]) -> None:
            ledger.swap(vm, mig, 1, kind=kind)
            ledger.claim(vm, dest, None, project_id="p", user_id="u")

        spawn(VMS[0], {HOSTS[0]: SMALL})
        moved(VMS[0], MIGRATIONS[0], "resize", {HOSTS[1]: BIG})
        ledger.confirm(MIGRATIONS[0], ledger.migration(MIGRATIONS[0]).generation or 0)

        spawn(VMS[1], {HOSTS[1]: SMALL})
        moved(VMS[1], MIGRATIONS[1], "migration", {HOSTS[2]: SMALL})
        ledger.revert(MIGRATIONS[1], ledger.migration(MIGRATIONS[1]).generation,
                      ledger.consumer(VMS[1]).generation)

        spawn(VMS[2], {HOSTS[0]: {**SMALL, PMEM: 1}})
        moved(VMS[2], MIGRATIONS[2], "resize", {HOSTS[0]: {**BIG, PMEM: 2}})

        spawn(VMS[3], {HOSTS[1]: SMALL})
        ledger.swap(VMS[3], MIGRATIONS[3], 1, kind="live-migration",
                    destination={HOSTS[2]: SMALL})

        spawn(VMS[4], {HOSTS[2]: SMALL})
        ledger.evacuate(VMS[4], MIGRATIONS[4], 1, destination={HOSTS[1]: SMALL})

        rows = [{"stream": str(n.originator_id), "version": n.originator_version,
                 "topic": n.topic, "state": json.loads(bytes(n.state))}
                for n in ledger.store.recorder.select_notifications(1, 100_000)]
    OUT.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    print(f"{len(rows)} events -> {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
