"""Nova's own ``SchedulerReportClient`` runs a compute node's life (``nova_life.py``)
against the ledger's ``serve`` on SQLite and PostgreSQL and against Placement 16 (its WSGI
application on a port, SQLite): after every step, the report client's return value and
the whole observable state (providers with parent, root, generation, inventories, traits,
aggregates and usages; consumers' allocations and generations; project
usages) are the same. Allocation candidates are compared order aside (Placement's order
is its own); the life then takes the first in a fixed order on both.

Needs Nova's and Placement's virtualenvs (``scripts/nova_venv.sh``,
``scripts/placement_venv.sh``); skipped with that reason without them.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.http.server import running_server
from tests.nova.test_report_client import nova_python
from tests.stores import postgres_schema_url

ROOT = Path(__file__).resolve().parents[2]
LIFE = Path(__file__).with_name("nova_life.py")
PLACEMENT_SERVER = Path(__file__).with_name("placement_server.py")


def placement_python() -> str:
    found = os.environ.get("LEDGER_PLACEMENT_PYTHON") or str(
        ROOT / ".venv-placement" / "bin" / "python")
    if not Path(found).exists():
        pytest.skip("openstack-placement is not installed: run scripts/placement_venv.sh "
                    "(or set LEDGER_PLACEMENT_PYTHON)")
    return found


def life(port: int) -> list[dict[str, Any]]:
    done = subprocess.run([nova_python(), str(LIFE), f"http://127.0.0.1:{port}"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    steps: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return [normalised(step) for step in steps]


def normalised(step: dict[str, Any]) -> dict[str, Any]:
    """Candidates and the traits of provider summaries order aside."""
    result = step["result"]
    if isinstance(result, dict) and "allocation_requests" in result:
        result["allocation_requests"] = sorted(
            result["allocation_requests"] or [], key=lambda c: json.dumps(c, sort_keys=True))
        for summary in (result["provider_summaries"] or {}).values():
            summary["traits"] = sorted(summary["traits"])
    return step


VM2 = "f0000000-0000-4000-8000-000000000002"


def documented(step: dict[str, Any], allocated: bool, emptied: set[str]) -> dict[str, Any]:
    """``step`` with the documented differences (docs/placement-differences.md) taken out.

    - Once allocations have been written (``allocated``), provider generations: the ledger
      advances a provider's generation when an allocation write changes its usage,
      Placement advances every provider named in the new allocations, changed or not,
      and none that a consumer leaves.
    - A consumer that ``move_allocations`` made is a migration in the ledger (its move
      commands open one), where Placement, told no consumer type (Nova writes at 1.28),
      reads ``unknown``; project usages by consumer type then count it under
      ``MIGRATION``: here folded back into ``unknown``.
    - The consumer generation of a consumer that was emptied (``emptied``) and then
      written again: the ledger's consumer keeps its stream and counts on (1, 2, 3),
      Placement deletes the emptied consumer and starts a new one (1).
    """
    step = json.loads(json.dumps(step))
    state = step["state"]
    if allocated:
        for rp in state["providers"].values():
            rp.pop("generation")
        for consumer in state["consumers"].values():
            for held in consumer["allocations"].values():
                held.pop("generation")
    for uuid in emptied:
        state["consumers"][uuid].pop("consumer_generation", None)
    for consumer in state["consumers"].values():
        if consumer.get("consumer_type") == "MIGRATION":
            consumer["consumer_type"] = "unknown"
    by_type = (state["project_usages"] or {}).get("usages", {})
    for rc, amount in by_type.pop("MIGRATION", {}).items():
        unknown = by_type.setdefault("unknown", {})
        unknown[rc] = unknown.get(rc, 0) + amount
    return step


def differences(ours: Any, theirs: Any, at: str = "") -> list[str]:
    """Where two JSON values differ, as ``path: ours != Placement's`` lines."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return [line for key in sorted(set(ours) | set(theirs), key=str)
                for line in differences(ours.get(key, "<absent>"),
                                        theirs.get(key, "<absent>"), f"{at}/{key}")]
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [line for n, (a, b) in enumerate(zip(ours, theirs, strict=True))
                for line in differences(a, b, f"{at}[{n}]")]
    return [] if ours == theirs else [f"{at}: {ours!r} != {theirs!r}"]


def placement_life(python: str, db: Path) -> list[dict[str, Any]]:
    server = subprocess.Popen([python, str(PLACEMENT_SERVER), f"sqlite:///{db}"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        return life(port)
    finally:
        server.terminate()
        server.wait(30)


@pytest.fixture(scope="module")
def placement(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Future[list[dict[str, Any]]]]:
    """Placement 16's life, run in the background (in its own processes) while the first
    ledger's runs."""
    python, _ = placement_python(), nova_python()
    db = tmp_path_factory.mktemp("placement16") / "placement.db"
    with ThreadPoolExecutor(1) as pool:
        yield pool.submit(placement_life, python, db)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger_port(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[int]:
    if request.param == "sqlite":
        with running_server(f"sqlite:///{tmp_path / 'ledger.db'}") as port:
            yield port
    else:
        with postgres_schema_url() as url, running_server(url) as port:
            yield port


def test_a_compute_nodes_life_as_placement_16(
        placement: Future[list[dict[str, Any]]], ledger_port: int) -> None:
    ours = life(ledger_port)
    theirs_all = placement.result()
    assert [s["step"] for s in ours] == [s["step"] for s in theirs_all]
    allocated, emptied = False, set()
    for our_step, their_step in zip(ours, theirs_all, strict=True):
        allocated = allocated or our_step["step"].startswith("claim_resources")
        if our_step["step"].startswith("move_allocations vm2"):
            emptied.add(VM2)
        mine = documented(our_step, allocated, emptied)
        theirs = documented(their_step, allocated, emptied)
        assert mine == theirs, (mine["step"], differences(mine, theirs))
    # The life did what it says: a reshape moved the instance's VGPU, candidates came
    # with granular mappings, and the clean-ups left nothing.
    steps = {s["step"]: s for s in theirs_all}
    reshaped = steps["reshape compute1"]["state"]["consumers"]
    assert reshaped["f0000000-0000-4000-8000-000000000001"]["allocations"][
        "e0000000-0000-4000-8000-000000000011"]["resources"] == {"VGPU": 1}
    found = steps["get_allocation_candidates"]["result"]
    assert found["allocation_requests"] and all(
        set(c["mappings"]) == {"", "1", "_NUMA"} for c in found["allocation_requests"])
    assert theirs_all[-1]["state"]["providers"] == {}
