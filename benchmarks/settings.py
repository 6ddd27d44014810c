"""What one benchmark run measures, and how long it spends on each figure.

Two presets: the full run (the default: the ledger grows to a million events) and a quick
run for smoke tests. Every figure is time-boxed (``duration`` seconds of work) rather than
counted, so a slow machine gives fewer samples, not a longer run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

STORE_KINDS = ("memory", "sqlite", "postgresql")
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/ledger_test"
POSTGRES_URL_ENV_VAR = "LEDGER_BENCH_POSTGRES_URL"


def default_postgres_url() -> str:
    """``$LEDGER_BENCH_POSTGRES_URL``, else ``$LEDGER_TEST_POSTGRES_URL``, else local."""
    return (
        os.environ.get(POSTGRES_URL_ENV_VAR)
        or os.environ.get("LEDGER_TEST_POSTGRES_URL")
        or DEFAULT_POSTGRES_URL
    )


@dataclass(frozen=True)
class Settings:
    """One run's choices. ``grow_to`` is the ledger size (events) of the history figure."""

    stores: tuple[str, ...] = ("sqlite", "postgresql")
    postgres_url: str = field(default_factory=default_postgres_url)
    workdir: Path | None = None
    out: Path = Path("bench-results/bench.json")
    duration: float = 5.0
    writers: tuple[int, ...] = (1, 2, 4, 8)
    #: hosts every writer of the contended shape claims on
    shared_hosts: int = 10
    #: threads of one process claiming at once (group commit)
    threads: int = 32
    batch_sizes: tuple[int, ...] = (1, 10, 100, 1000)
    small_history: int = 1_000
    grow_to: int = 1_000_000
    history_claims: int = 600
    breakdown_claims: int = 500
    #: ledger sizes (events) of T4's replay, smaller and larger (the target's: 100k, 1M)
    replay_events: tuple[int, ...] = (10_000, 100_000)
    #: hosts of T5's large cloud (the target's: 100,000)
    scale_hosts: int = 10_000
    #: ``serve --workers`` of T6 (by default one per core, as the target asks)
    serve_workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    #: T1-T6 ("with" the other figures, "only" them, or "skip" them)
    ratios: str = "with"
    quick: bool = False

    def with_overrides(self, **changes: object) -> Settings:
        """A copy with the given fields changed (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})  # type: ignore[arg-type]


def full() -> Settings:
    """The default run: every figure, ledger grown to a million events."""
    return Settings()


def quick() -> Settings:
    """A smoke run: short samples, ledger grown to 20,000 events."""
    return Settings(duration=1.0, grow_to=20_000, history_claims=100, breakdown_claims=100,
                    replay_events=(1_000, 5_000), scale_hosts=200, quick=True)
