"""The pictures of ``python -m benchmarks --plot DIR`` and ``python -m benchmarks.http --plot
DIR``, drawn from the figures the run has just measured, so that each picture in
``docs/img/`` is the output of the command in its caption."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import plots
from benchmarks.report import TITLES


def draw(results: dict[str, Any], folder: Path, command: str) -> list[Path]:
    """Claims beside the floor, writer processes, and where a single claim's time goes,
    one picture each, for every store of ``results``."""
    stores = results["stores"]
    names = [TITLES.get(kind, kind) for kind in stores]
    drawn = [plots.bars(
        folder / "bench-claims.svg", title="Claims per second beside the one-row floor",
        ylabel="per second", categories=list(_rates(next(iter(stores.values())))),
        series={name: list(_rates(result).values())
                for name, result in zip(names, stores.values(), strict=True)},
        caption=command)]
    counts = sorted(int(n) for n in next(iter(stores.values()))["writers"] if n.isdigit())
    series: dict[str, list[float]] = {}
    for name, result in zip(names, stores.values(), strict=True):
        writers = result["writers"]
        series[f"{name}, a host each"] = [writers[str(n)]["claims"]["rate"] for n in counts]
        if all("shared" in writers[str(n)] for n in counts):
            series[f"{name}, 10 shared hosts"] = [writers[str(n)]["shared"]["rate"]
                                                  for n in counts]
    drawn.append(plots.lines(
        folder / "bench-writers.svg", title="Claims per second by writer processes",
        xlabel="writer processes", ylabel="claims per second", x=counts, series=series,
        caption=command))
    parts: dict[str, list[float]] = {}
    for i, result in enumerate(stores.values()):
        for label, us in result["breakdown"]["parts_us"].items():
            parts.setdefault(label, [0.0] * len(stores))[i] = us
    drawn.append(plots.stacked(
        folder / "bench-breakdown.svg", title="Where a single claim's time goes",
        ylabel="microseconds per claim", categories=names, parts=parts, caption=command))
    return drawn


def _rates(result: dict[str, Any]) -> dict[str, float]:
    """The headline rates of one store, by label, the floor first."""
    found = {"one-row floor": result["single"]["floor"]["rate"],
             "single claims": result["single"]["rate"]}
    if "threads" in result:
        found[f"{result['threads']['threads']} threads"] = result["threads"]["rate"]
    batches = result["batches"]
    for n in sorted((k for k in batches if k.isdigit()), key=int):
        found[f"{n} per append"] = batches[n]["rate"]
    return found


def http(figures: Sequence[Any], folder: Path, command: str) -> Path:
    """``python -m benchmarks.http --plot DIR``: claims/s in-process and over HTTP by
    number of clients, one series per store and server setting."""
    clients = sorted({n for f in figures for n in f.over_http})
    return plots.bars(
        folder / "bench-http.svg", title="Claims per second over HTTP beside in-process",
        ylabel="claims per second",
        categories=["in-process", *(f"{n} client{'s' * (n > 1)}" for n in clients)],
        series={f.store: [f.in_process, *(f.over_http.get(n, 0.0) for n in clients)]
                for f in figures},
        caption=command)
