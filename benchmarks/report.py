"""The benchmark's results as a readable table, and as JSON on disk."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks import targets as cpu_targets

TITLES = {"memory": "in-memory", "sqlite": "SQLite", "postgresql": "PostgreSQL"}
HEADER = (f"  {'figure':<36}{'rate/s':>10}{'floor/s':>10}{'vs floor':>9}{'p50 ms':>9}"
          f"{'p95 ms':>9}{'p99 ms':>9}{'p50/floor':>10}")


def write_json(results: dict[str, Any], path: Path) -> None:
    """Write the results to ``path`` (parent directories created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


def table(results: dict[str, Any]) -> str:
    """Every figure of every store, then the targets."""
    lines: list[str] = []
    for kind, result in results["stores"].items():
        lines.append(f"{TITLES.get(kind, kind)} (floor: one autocommit INSERT, one round trip; "
                     "batches: executemany of as many rows in one transaction, and COPY; "
                     "each timed beside its figure)")
        lines.append(HEADER)
        lines.extend(_rows(result))
        lines.extend(_history(result["history"]))
        lines.extend(_breakdown(result["breakdown"]))
        lines.append("")
    if results["targets"]:
        lines.append("targets:")
    for t in results["targets"]:
        mark = "met   " if t["met"] else "MISSED"
        lines.append(f"  {mark} {t['store']:<11} {t['name']:<48} {t['value']:>10} "
                     f"(goal {t['goal']})")
    if results.get("ratios"):
        lines.extend(["", cpu_targets.table(results["ratios"])])
    return "\n".join(lines)


def _rows(result: dict[str, Any]) -> Iterator[str]:
    yield _row("single claims", result["single"])
    ids = result.get("command_ids")
    if ids:
        yield _row("  with a caller's command id", ids["with_ids"])
        yield _row("  without (beside it)", ids["without_ids"])
        yield f"  {'':<4}with ids / without: {ids['ids_vs_without']:.3f}"
        yield _row("  recorded, without id", ids["plain"])
        yield _row("  no command record (as before ids)", ids["unrecorded"])
        yield f"  {'':<4}recorded / unrecorded: {ids['recorded_vs_unrecorded']:.3f}"
    if result.get("chain"):
        found = result["chain"]
        yield (f"  hash chain: {found['rate']:,.1f} chained claims/s beside "
               f"{found['floor']['rate']:,.1f} unchained in the same run: "
               f"{found['vs_floor'] * 100:.1f}%")
    if "threads" in result:
        found = result["threads"]
        yield _row(f"claims, {found['threads']} threads at once", found)
        yield f"    ({found['grouped_per_append']} grouped commands per shared append)"
    writers = result["writers"]
    for n in _numbered(writers):
        yield _row(f"claims, {n} writer(s), a host each", writers[n]["claims"])
    for n in _numbered(writers):
        if "shared" in writers[n]:
            shared = writers[n]["shared"]
            yield _row(f"claims, {n} writer(s), shared hosts", shared)
            if "appends_per_op" in shared:
                yield (f"    ({shared['appends_per_op']} appends asked of the store per claim, "
                       "refused ones too)")
    for name, found in result["moves"].items():
        yield _row(f"swap+claim+{name} (cycles)", found)
    for n in _numbered(result["batches"]):
        batch = result["batches"][n]
        yield _row(f"batched claims, {n} per append", batch)
        if "copy" in batch:
            yield (f"  {'  beside COPY of as many rows':<36}{'':>10}{batch['copy']['rate']:>10,.0f}"
                   f"{batch['vs_copy'] * 100:8.1f}%")


def _history(h: dict[str, Any]) -> Iterator[str]:
    events = h["events"]
    yield _row(f"claims at {events['before']:,} events", h["before"])
    yield _row(f"claims at {events['grown']:,} events", h["after"])
    yield _row(f"claims on the twin ({events['twin']:,} events)", h["twin"])
    cold = h["cold"]
    yield (f"  grown/twin p50 {h['ratio_p50_vs_twin']}x, grown/before p50 "
           f"{h['ratio_p50_vs_before']}x; first claim of a fresh store: "
           f"{cold['small']['ms']} ms ({cold['small']['rows_read']} rows read) small, "
           f"{cold['large']['ms']} ms ({cold['large']['rows_read']} rows read, host stream "
           f"{cold['large']['host_stream_length']:,}) grown; growth "
           f"{h['growth']['events_per_second']:,.0f} events/s")


def _breakdown(b: dict[str, Any]) -> Iterator[str]:
    total = b["us_per_claim"]
    yield f"  where a single claim's {total:,.0f} us go:"
    for label, us in sorted(b["parts_us"].items(), key=lambda kv: -kv[1]):
        calls = b["calls_per_claim"].get(label)
        per = f"  ({calls} calls)" if calls is not None else ""
        yield f"    {label:<48}{us:>9,.1f} us {us / total * 100:5.1f}%{per}"


def _numbered(figures: dict[str, Any]) -> list[str]:
    return sorted((k for k in figures if k.isdigit()), key=int)


def _row(label: str, f: dict[str, Any]) -> str:
    if "floor" in f:
        beside = (f"{f['floor']['rate']:>10,.0f}{f['vs_floor'] * 100:8.1f}%")
        times = f"{f['p50_vs_floor']:9.2f}x"
    else:
        beside, times = f"{'':>19}", ""
    return (f"  {label:<36}{f['rate']:>10,.1f}{beside}{_ms(f['p50_ms'])}{_ms(f['p95_ms'])}"
            f"{_ms(f['p99_ms'])}{times}")


def _ms(value: float | None) -> str:
    return f"{value:9.3f}" if value is not None else f"{'-':>9}"
