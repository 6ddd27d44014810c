"""The progress bar of catch-ups: the command line's one bar (see
``allocation_ledger.cli.output``)."""

from __future__ import annotations

from allocation_ledger.cli.output import ProgressBar

__all__ = ["ProgressBar"]
