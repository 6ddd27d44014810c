"""Figures as ratios of the raw floor measured in the same run, and the targets they meet.

A rate's ``vs_floor`` is its rate over the floor's (one-writer) rate; a latency's
``p50_vs_floor`` is how many floor transactions one operation takes. For moves the rate is
counted in commands (three per cycle) so it compares with one insert per transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from allocation_ledger.adapters.eventstore import SNAPSHOT_INTERVAL
from benchmarks.stats import Sample


def figure(sample: Sample, floor: Sample, *, commands_per_op: int = 1,
           also: dict[str, Sample] | None = None) -> dict[str, Any]:
    """``sample`` as JSON, with the ``floor`` measured beside it and the ratios to it; each
    of ``also`` (another floor timed beside it, by name) adds ``<name>`` and
    ``vs_<name>``."""
    found = sample.to_dict()
    found["floor"] = floor.to_dict()
    found["vs_floor"] = round(sample.rate * commands_per_op / floor.rate, 4)
    found["p50_vs_floor"] = round(sample.percentile(50) / floor.percentile(50), 3)
    for name, other in (also or {}).items():
        found[name] = other.to_dict()
        found[f"vs_{name}"] = round(sample.rate * commands_per_op / other.rate, 4)
    if sample.appends:
        found["appends_per_op"] = round(sample.appends / sample.count, 3)
    if commands_per_op != 1:
        found["commands_per_second"] = round(sample.rate * commands_per_op, 2)
    return found


@dataclass(frozen=True)
class Target:
    """A goal for one figure of one store, and whether this run met it."""

    store: str
    name: str
    value: float
    goal: str
    met: bool

    def to_dict(self) -> dict[str, Any]:
        """The target as JSON."""
        return {"store": self.store, "name": self.name, "value": self.value,
                "goal": self.goal, "met": self.met}


def targets(store: str, result: dict[str, Any]) -> list[Target]:
    """The targets that apply to one store's results."""
    found: list[Target] = []
    if store == "postgresql":
        ratio = result["single"]["vs_floor"]
        found.append(Target(store, "single claims vs one-trip INSERT floor", ratio, ">= 0.4",
                            ratio >= 0.4))
    if "threads" in result:
        ratio, goal = result["threads"]["vs_floor"], 1.5 if store == "postgresql" else 1.0
        found.append(Target(store, f"{result['threads']['threads']} threads vs one-row floor",
                            ratio, f">= {goal}", ratio >= goal))
    if store == "postgresql" and result["batches"]:
        largest = max(result["batches"], key=int)
        rate = result["batches"][largest]["rate"]
        found.append(Target(store, f"batched claims/s (batch {largest})", rate, ">= 5000",
                            rate >= 5000))
    ids = result.get("command_ids")
    if ids:
        ratio = ids["ids_vs_without"]
        found.append(Target(store, "single claims with command ids vs without", ratio,
                            ">= 0.90", ratio >= 0.90))
    if result.get("chain"):
        ratio = result["chain"]["vs_floor"]
        found.append(Target(store, "single claims with the chain vs without", ratio,
                            ">= 0.90", ratio >= 0.90))
    writers = result["writers"]
    most = max(writers, key=int, default="1")
    if most != "1" and "1" in writers:
        for shape, label in (("claims", "a host each"), ("shared", "shared hosts")):
            ratio = round(writers[most][shape]["rate"] / writers["1"][shape]["rate"], 3)
            found.append(Target(store, f"{most} writers vs 1 writer, {label} (claims/s)",
                                ratio, ">= 1.0", ratio >= 1.0))
    history = result.get("history")
    if history:
        ratio = history["ratio_p50_vs_twin"]
        found.append(Target(store, "claim p50 at grown ledger vs 1k-event twin", ratio,
                            "<= 1.25", ratio <= 1.25))
    if history and store != "memory":  # an in-memory store cannot be opened afresh
        rows = history["cold"]["large"]["rows_read"]
        found.append(Target(store, "rows a fresh store reads for its first claim", rows,
                            f"<= {SNAPSHOT_INTERVAL + 10}", rows <= SNAPSHOT_INTERVAL + 10))
    return found
