"""The ``allocation-ledger`` command line: one subcommand per module in ``COMMANDS``.

Each subcommand module has ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int`` (the exit code). Every subcommand takes ``--url`` (default: the
``LEDGER_URL`` environment variable, else ``sqlite:///ledger.db``). Errors print one line to
stderr and exit 1 (2 for bad usage), like other good CLIs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from allocation_ledger.domain.errors import LedgerError

COMMANDS = [
    "allocation_ledger.cli.demo",
    "allocation_ledger.cli.show",
    "allocation_ledger.cli.command",
    "allocation_ledger.cli.projections",
    "allocation_ledger.cli.audit",
    "allocation_ledger.cli.history",
    "allocation_ledger.cli.state_at",
    "allocation_ledger.cli.bench",
]


def _load() -> list[ModuleType]:
    return [importlib.import_module(name) for name in COMMANDS]


def build_parser(modules: Sequence[ModuleType]) -> argparse.ArgumentParser:
    """The parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="allocation-ledger",
        description="An event-sourced ledger of cloud resource allocations.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in modules:
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        cmd.add_argument("--url", default=None,
                         help="store URL (default: $LEDGER_URL, else sqlite:///ledger.db)")
        module.add_arguments(cmd)
        cmd.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``allocation-ledger`` console script."""
    parser = build_parser(_load())
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
    except LedgerError as err:
        print(f"allocation-ledger {args.command}: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
