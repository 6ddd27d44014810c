"""The ``allocation-ledger`` command line: one subcommand per module in ``COMMANDS``.

Each subcommand module has ``NAME``, ``HELP``, ``EXAMPLES``, ``add_arguments(parser)`` and
``run(args) -> int`` (the exit code), and imports nothing heavy at module level: the store,
the service and the read side are imported inside ``run``, so ``--help`` and usage errors
answer at once. The global options (``--url``, ``--json``, ``--no-progress``) are accepted
before or after the subcommand. Errors print one line on stderr (a JSON object with
``--json``) and exit 1; bad usage exits 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from allocation_ledger.cli.options import UsageError, add_global_options, settle_format
from allocation_ledger.cli.output import dumps
from allocation_ledger.domain.errors import LedgerError

COMMANDS = [
    "allocation_ledger.cli.demo",
    "allocation_ledger.cli.show",
    "allocation_ledger.cli.listing",
    "allocation_ledger.cli.usage",
    "allocation_ledger.cli.projections",
    "allocation_ledger.cli.audit",
    "allocation_ledger.cli.repair",
    "allocation_ledger.cli.history",
    "allocation_ledger.cli.state_at",
    "allocation_ledger.cli.import_placement",
    "allocation_ledger.cli.metrics",
    "allocation_ledger.cli.bench",
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
    parser = argparse.ArgumentParser(
        prog="allocation-ledger",
        description="An event-sourced ledger of cloud resource allocations.",
        epilog=EXAMPLES, formatter_class=raw,
    )
    parser.add_argument("--version", action=_Version)
    add_global_options(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in modules:
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP,
                             epilog="examples:\n" + module.EXAMPLES, formatter_class=raw)
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
    except UsageError as err:
        print(f"allocation-ledger {args.command}: error: {err}", file=sys.stderr)
        return 2
    except LedgerError as err:
        if args.json:
            print(dumps(err.to_dict()), file=sys.stderr)
        else:
            print(f"allocation-ledger {args.command}: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
