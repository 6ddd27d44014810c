"""The benchmark's results as a readable table, and as JSON on disk."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TITLES = {"memory": "in-memory", "sqlite": "SQLite", "postgresql": "PostgreSQL"}
HEADER = (f"  {'figure':<38}{'rate/s':>11}{'vs floor':>10}{'p50 ms':>9}{'p95 ms':>9}"
          f"{'p99 ms':>9}{'p50/floor':>10}")


def write_json(results: dict[str, Any], path: Path) -> None:
    """Write the results to ``path`` (parent directories created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


def table(results: dict[str, Any]) -> str:
    """Every figure of every store, then the targets."""
    lines: list[str] = []
    for kind, result in results["stores"].items():
        floor = result["floor"]["reference"]
        lines.append(f"{TITLES.get(kind, kind)}: raw floor {floor['rate']:,.0f} inserts/s, "
                     f"p50 {floor['p50_ms']:.3f} ms (one INSERT per transaction)")
        lines.append(HEADER)
        lines.extend(_rows(result))
        lines.extend(_history(result["history"]))
        lines.append("")
    lines.append("targets:")
    for t in results["targets"]:
        mark = "met   " if t["met"] else "MISSED"
        lines.append(f"  {mark} {t['store']:<11} {t['name']:<48} {t['value']:>10} "
                     f"(goal {t['goal']})")
    return "\n".join(lines)


def _rows(result: dict[str, Any]) -> Iterator[str]:
    for n in _numbered(result["floor"]):
        yield _row(f"raw floor, {n} writer(s)", result["floor"][n])
    for n in _numbered(result["claims"]):
        yield _row(f"claims, {n} writer process(es)", result["claims"][n])
    for name, found in result["moves"].items():
        yield _row(f"swap+claim+{name} (cycles)", found)
    for n in _numbered(result["batches"]):
        yield _row(f"batched claims, {n} per append", result["batches"][n])


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


def _numbered(figures: dict[str, Any]) -> list[str]:
    return sorted((k for k in figures if k.isdigit()), key=int)


def _row(label: str, f: dict[str, Any]) -> str:
    ratio = f.get("vs_floor")
    vs = f"{ratio * 100:9.1f}%" if ratio is not None else f"{'':>10}"
    p50_ratio = f.get("p50_vs_floor")
    times = f"{p50_ratio:9.2f}x" if p50_ratio is not None else ""
    return (f"  {label:<38}{f['rate']:>11,.1f}{vs}{_ms(f['p50_ms'])}{_ms(f['p95_ms'])}"
            f"{_ms(f['p99_ms'])}{times}")


def _ms(value: float | None) -> str:
    return f"{value:9.3f}" if value is not None else f"{'-':>9}"
