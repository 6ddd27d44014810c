"""The ``allocation-ledger`` command line: one subcommand per module in ``COMMANDS``.

Each subcommand module has ``NAME``, ``HELP``, ``EXAMPLES``, ``add_arguments(parser)`` and
``run(args) -> int`` (the exit code), and imports nothing heavy at module level: the store,
the service and the read side are imported inside ``run``, so ``--help`` and usage errors
answer at once. The global options (``--url``, ``--json``, ``-f``, ``--no-progress``) are
accepted before or after the subcommand.

Every failure goes through one place, :func:`failure`: it prints one line on stderr (a JSON
object with ``--json``), never a traceback (``--debug`` shows it), and exits 2 for bad usage
or bad values (argparse's errors, a :class:`UsageError`, a malformed URL, id, time or
number: :class:`InvalidRequest`), 1 for an operation that was refused or failed (any other
:class:`LedgerError`, a missing ledger, a store that cannot be reached or read).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from allocation_ledger.cli.options import UsageError, add_global_options, settle_format
from allocation_ledger.cli.output import dumps
from allocation_ledger.domain.errors import InvalidRequest, LedgerError

COMMANDS = [
    "allocation_ledger.cli.demo",
    "allocation_ledger.cli.show",
    "allocation_ledger.cli.listing",
    "allocation_ledger.cli.usage",
    "allocation_ledger.cli.command",
    "allocation_ledger.cli.projections",
    "allocation_ledger.cli.audit",
    "allocation_ledger.cli.digest",
    "allocation_ledger.cli.db",
    "allocation_ledger.cli.repair",
    "allocation_ledger.cli.history",
    "allocation_ledger.cli.state_at",
    "allocation_ledger.cli.import_placement",
    "allocation_ledger.cli.metrics",
    "allocation_ledger.cli.serve",
    "allocation_ledger.cli.completion",
]

EXAMPLES = """\
examples:
  allocation-ledger demo
  allocation-ledger --url postgresql://ledger@db/ledger?sslmode=require list providers
  allocation-ledger list providers --resource VCPU=4 --json
  allocation-ledger show provider 6ae32ac4          # a unique UUID prefix is enough
  allocation-ledger audit --stale-after 3600
  allocation-ledger repair --stale-after 3600 --action revert --dry-run
  allocation-ledger <command> --help                # each command's options and examples
"""


def _load() -> list[ModuleType]:
    return [importlib.import_module(name) for name in COMMANDS]


class Parser(argparse.ArgumentParser):
    """``argparse`` whose usage errors are one line (``prog: error: ...``), exit 2."""

    def error(self, message: str) -> NoReturn:
        """Print the one line and exit 2."""
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see --help)\n")


class _Version(argparse.Action):
    """``--version``: the installed package's version (looked up only when asked)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        import allocation_ledger

        print(f"{parser.prog} {allocation_ledger.__version__}")
        parser.exit()


def build_parser(modules: Sequence[ModuleType]) -> argparse.ArgumentParser:
    """The parser with every subcommand."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = Parser(
        prog="allocation-ledger",
        description="An event-sourced ledger of cloud resource allocations.",
        epilog=EXAMPLES, formatter_class=raw,
    )
    parser.add_argument("--version", action=_Version)
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of a failure")
    add_global_options(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in modules:
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP,
                             epilog="examples:\n" + module.EXAMPLES, formatter_class=raw)
        cmd.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                         help="show the traceback of a failure")
        module.add_arguments(cmd)
        add_global_options(cmd, suppress=True)
        cmd.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``allocation-ledger`` console script."""
    parser = build_parser(_load())
    args = parser.parse_args(argv)
    settle_format(args)
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
        if args.json:
            fields = err.to_dict() if isinstance(err, LedgerError) else {
                "error": type(err).__name__, "message": message}
            print(dumps(fields), file=sys.stderr)
        else:
            print(f"allocation-ledger {args.command}: {message}", file=sys.stderr)
    return code


# The optional dependencies, by the module a command imports, and the extra that brings it.
EXTRAS = {"starlette": "http", "uvicorn": "http", "httptools": "http", "pythonjsonlogger": "http",
          "prometheus_client": "metrics", "pymysql": "placement"}


def failure(err: Exception) -> tuple[int, str]:
    """The exit code and the one line for a failure (see the module's docstring)."""
    # imported here: the store's modules load only when something failed (--help stays cheap)
    from allocation_ledger.bootstrap import is_store_failure, one_line

    if isinstance(err, UsageError):
        return 2, f"error: {one_line(err)}"
    if isinstance(err, InvalidRequest):
        return 2, one_line(err)
    if isinstance(err, LedgerError):
        return 1, one_line(err)
    if is_store_failure(err):
        return 1, f"store failure: {one_line(err)}"
    if isinstance(err, ModuleNotFoundError) and err.name:
        top = err.name.partition(".")[0]
        extra = EXTRAS.get(top)
        if extra:
            return 1, (f"this command needs {top}, which is not installed: "
                       f"pip install 'allocation-ledger[{extra}]'")
    return 1, f"unexpected {type(err).__name__}: {one_line(err)} (--debug shows the traceback)"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
