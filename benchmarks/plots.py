"""Benchmark figures as pictures for the documentation site (``docs/img/``).

Every benchmark that has figures worth a picture takes ``--plot DIR`` and calls one of these
with the numbers it has just measured, so a picture in ``docs/`` is always the output of
the command named in its caption. SVG, drawn by matplotlib without a screen (``Agg``), with
its text kept as text and its metadata date left out so that the same numbers give the same file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt

plt.switch_backend("Agg")  # no screen
matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, searchable

_SAVE: dict[str, Any] = {"format": "svg", "metadata": {"Date": None}, "bbox_inches": "tight"}


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, **_SAVE)
    plt.close(fig)
    return path


def bars(path: Path, *, title: str, ylabel: str, categories: Sequence[str],
         series: Mapping[str, Sequence[float]], caption: str = "",
         log: bool = False) -> Path:
    """Grouped bars: one group per category, one bar per series (``series[name][i]`` is
    the value for ``categories[i]``), each labelled with its value."""
    fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(categories) * len(series) ** 0.5), 3.6))
    width = 0.8 / max(1, len(series))
    for k, (name, values) in enumerate(series.items()):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(categories))]
        drawn = ax.bar(xs, values, width, label=name)
        ax.bar_label(drawn, labels=[_short(v) for v in values], fontsize=7, padding=1)
    ax.set_xticks(range(len(categories)), list(categories))
    _finish(ax, title=title, ylabel=ylabel, caption=caption, log=log, legend=len(series) > 1)
    return _save(fig, path)


def lines(path: Path, *, title: str, xlabel: str, ylabel: str, x: Sequence[float],
          series: Mapping[str, Sequence[float]], caption: str = "", log: bool = False,
          logx: bool = False) -> Path:
    """One line with markers per series over the same ``x``."""
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for name, values in series.items():
        ax.plot(list(x), list(values), marker="o", label=name)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    _finish(ax, title=title, ylabel=ylabel, caption=caption, log=log, legend=len(series) > 1)
    return _save(fig, path)


def stacked(path: Path, *, title: str, ylabel: str, categories: Sequence[str],
            parts: Mapping[str, Sequence[float]], caption: str = "") -> Path:
    """Stacked bars: one bar per category made of ``parts`` (``parts[name][i]`` for
    ``categories[i]``), as a CPU split by bucket."""
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(categories)), 3.8))
    bottom = [0.0] * len(categories)
    for name, values in parts.items():
        ax.bar(list(categories), list(values), bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    for i, total in enumerate(bottom):
        ax.annotate(_short(total), (i, total), ha="center", va="bottom", fontsize=7)
    _finish(ax, title=title, ylabel=ylabel, caption=caption, log=False, legend=False)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside, not over
    return _save(fig, path)


def _finish(ax: Any, *, title: str, ylabel: str, caption: str, log: bool,
            legend: bool) -> None:
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    if legend:
        ax.legend(fontsize=7)
    if caption:
        ax.figure.text(0.01, -0.02, caption, fontsize=7, ha="left", va="top",
                       family="monospace")


def _short(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2g}"
