"""Argument types of the command line: numbers are checked where they are parsed, so a bad
one is a usage error (one line, exit 2) and never reaches a database (a position past 64
bits) or a timer (``nan`` seconds)."""

from __future__ import annotations

import argparse
import math

#: The largest ledger position (notification id) a store can hold.
MAX_POSITION = 2**63 - 1
#: The longest age or wait taken (ten years: ``domain.migration.MAX_AGE_SECONDS``, not
#: imported here so that ``--help`` stays quick); more overflows dates and timers.
MAX_SECONDS = 10 * 365 * 24 * 3600


def _integer(text: str, least: int, most: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be an integer, got {text!r}") from None
    if not least <= value <= most:
        raise argparse.ArgumentTypeError(f"{what} must be from {least} to {most}, got {value}")
    return value


def position(text: str) -> int:
    """A ledger position: 0 (before the first event) up to 2**63 - 1."""
    return _integer(text, 0, MAX_POSITION, "a position")


def count(text: str) -> int:
    """A positive count (events per batch, claims...)."""
    return _integer(text, 1, 2**31 - 1, "a count")


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{what} must be a finite number of 0 or more, "
                                         f"got {text!r}")
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{what} must be at most {MAX_SECONDS} (ten "
                                         f"years), got {text!r}")
    return value


def seconds(text: str) -> float:
    """A number of seconds from 0 to :data:`MAX_SECONDS`."""
    return _number(text, "seconds")


def positive_seconds(text: str) -> float:
    """A number of seconds more than 0, up to :data:`MAX_SECONDS`."""
    value = _number(text, "seconds")
    if value == 0:
        raise argparse.ArgumentTypeError("seconds must be more than 0, got 0")
    return value
