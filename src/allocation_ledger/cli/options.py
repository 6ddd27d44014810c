"""The options every subcommand shares, and argument types that refuse bad values as usage
errors (exit 2) before anything runs. Cheap to import: ``--help`` loads only this and
``argparse``."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from allocation_ledger.cli import values

FORMATS = ("table", "json", "csv")
URL_HELP = "store URL (default: $LEDGER_URL, else sqlite:///ledger.db)"


class UsageError(Exception):
    """Raised by a command for a combination of arguments argparse cannot check: printed as
    a usage error, exit 2."""


def add_global_options(parser: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """``--url``, ``--json``, ``--no-progress`` (alias ``--quiet``).

    The top-level parser gets them with defaults, each subparser with
    ``argparse.SUPPRESS`` so that a value given after the subcommand wins and one given
    before it is not reset: ``allocation-ledger --url U audit`` and ``allocation-ledger
    audit --url U`` are the same call.
    """
    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("global options (before or after the command)")
    group.add_argument("--url", default=default(None), metavar="URL", help=URL_HELP)
    group.add_argument("--json", action="store_true", default=default(False),
                       help="print JSON (errors too, on stderr); the same as -f json")
    group.add_argument("-f", "--format", choices=FORMATS, default=default("table"),
                       help="table (default), json, or csv for the commands that print "
                            "tables")
    group.add_argument("--no-progress", "--quiet", dest="no_progress", action="store_true",
                       default=default(False),
                       help="never draw a progress bar (drawn on a terminal only anyway)")


def settle_format(args: argparse.Namespace) -> None:
    """``--json`` and ``-f json`` mean the same: both set ``args.json`` and
    ``args.format``."""
    if args.format == "json":
        args.json = True
    elif args.json:
        args.format = "json"


# The number types are issue 13's (``cli.values``): bounded positions and counts, finite
# seconds; these names are the ones the operator commands use.
non_negative_int = values.position
positive_int = values.count
non_negative_float = values.seconds
positive_float = values.positive_seconds


def parse_time(text: str) -> datetime:
    """An ISO 8601 time; one without a timezone is taken as UTC."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def resource_amount(text: str) -> tuple[str, int]:
    """``VCPU=4``: a resource class and an amount >= 1."""
    name, sep, amount = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected CLASS=AMOUNT like VCPU=4, got {text!r}")
    return name.strip().upper(), positive_int(amount)
