"""The ``allocation-ledger`` command line: one subcommand per module in ``COMMANDS``.

Each subcommand module has ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int`` (the exit code). Every subcommand takes ``--url`` (default: the
``LEDGER_URL`` environment variable, else ``sqlite:///ledger.db``).

Every failure goes through one place, :func:`failure`: it prints one line on stderr, never a
traceback (``--debug`` shows it), and exits 2 for bad usage or bad values (argparse's
errors, a malformed URL, id, time or number: :class:`InvalidRequest`), 1 for an operation
that was refused or failed (any other :class:`LedgerError`, a missing ledger, a store that
cannot be reached or read).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from allocation_ledger.bootstrap import is_store_failure, one_line
from allocation_ledger.domain.errors import InvalidRequest, LedgerError

COMMANDS = [
    "allocation_ledger.cli.demo",
    "allocation_ledger.cli.show",
    "allocation_ledger.cli.command",
    "allocation_ledger.cli.projections",
    "allocation_ledger.cli.audit",
    "allocation_ledger.cli.digest",
    "allocation_ledger.cli.db",
    "allocation_ledger.cli.history",
    "allocation_ledger.cli.state_at",
    "allocation_ledger.cli.bench",
    "allocation_ledger.cli.serve",
]


def _load() -> list[ModuleType]:
    return [importlib.import_module(name) for name in COMMANDS]


class Parser(argparse.ArgumentParser):
    """``argparse`` whose usage errors are one line (``prog: error: ...``), exit 2."""

    def error(self, message: str) -> NoReturn:
        """Print the one line and exit 2."""
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see --help)\n")


def build_parser(modules: Sequence[ModuleType]) -> argparse.ArgumentParser:
    """The parser with every subcommand."""
    parser = Parser(
        prog="allocation-ledger",
        description="An event-sourced ledger of cloud resource allocations.",
    )
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of a failure")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in modules:
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        cmd.add_argument("--url", default=None,
                         help="store URL (default: $LEDGER_URL, else sqlite:///ledger.db)")
        cmd.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                         help="show the traceback of a failure")
        module.add_arguments(cmd)
        cmd.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``allocation-ledger`` console script."""
    parser = build_parser(_load())
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as err:
        if args.debug:
            raise
        code, message = failure(err)
        print(f"allocation-ledger {args.command}: {message}", file=sys.stderr)
    return code


def failure(err: Exception) -> tuple[int, str]:
    """The exit code and the one line for a failure (see the module's docstring)."""
    if isinstance(err, InvalidRequest):
        return 2, one_line(err)
    if isinstance(err, LedgerError):
        return 1, one_line(err)
    if is_store_failure(err):
        return 1, f"store failure: {one_line(err)}"
    return 1, f"unexpected {type(err).__name__}: {one_line(err)} (--debug shows the traceback)"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
