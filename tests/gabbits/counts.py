"""Print how Placement's gabbits fare against the server: per file and per set, the tests
that pass, fail and cannot run (a data fixture needs an endpoint the server lacks).

    .venv/bin/python -m tests.gabbits.counts                  # run every file on SQLite
    .venv/bin/python -m tests.gabbits.counts --store postgres
    .venv/bin/python -m tests.gabbits.counts --store placement   # Placement 16 itself
    .venv/bin/python -m tests.gabbits.counts --results run.json   # a saved run
                                                  # (record --results run.json saves one)
    .venv/bin/python -m tests.gabbits.counts --reasons   # expectations.toml per reason

The sets: ``core`` (providers, inventories, resource classes, allocations, usages,
microversions, HTTP basics), ``policy`` (their 15 policy/RBAC files) and ``issue-26``
(traits, aggregates, allocation candidates, reshaper, provider-list filters, granular,
same-subtree, root-required, mappings, any-traits, sharing, and their policy files).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

from tests.gabbits import harness
from tests.gabbits.harness import SETS, Outcome


def tally(outcomes: list[Outcome]) -> Counter[str]:
    """passed / failed / cannot-run / tests for one file."""
    found: Counter[str] = Counter(tests=len(outcomes))
    found.update(harness.actual(o) for o in outcomes)
    return found


def print_counts(results: dict[str, list[Outcome]]) -> None:
    """The table: one line per file, grouped by set, then each set's and the whole total."""
    row = "{:<48} {:>6} {:>7} {:>7} {:>11}"
    totals: dict[str, Counter[str]] = {name: Counter() for name in SETS}
    for group in SETS:
        print(f"\n== {group}")
        print(row.format("file", "tests", "passed", "failed", "cannot run"))
        for name in sorted(n for n in results if harness.set_of(n) == group):
            counted = tally(results[name])
            totals[group].update(counted)
            print(row.format(name, counted["tests"], counted["passed"], counted["failed"],
                             counted["cannot-run"]))
    print("\n== totals")
    print(row.format("set", "tests", "passed", "failed", "cannot run"))
    for group in SETS:
        counted = totals[group]
        print(row.format(group, counted["tests"], counted["passed"], counted["failed"],
                         counted["cannot-run"]))
    whole = sum(totals.values(), Counter())
    print(row.format("all", whole["tests"], whole["passed"], whole["failed"],
                     whole["cannot-run"]))


def category(reason: str) -> str:
    """A reason without its parenthesised details: ``difference: error text``."""
    return reason.split(" (", maxsplit=1)[0].split(";", maxsplit=1)[0].strip()


def print_reasons(expectations: dict[str, harness.FileExpectation]) -> None:
    """How many tests each reason category of the expectations file covers, by set."""
    found: dict[str, Counter[str]] = {}
    for entry in expectations.values():
        listed = ({category(entry.cannot_run): entry.tests} if entry.cannot_run
                  else Counter(category(why) for why in entry.failing.values()))
        for reason, count in listed.items():
            found.setdefault(reason, Counter())[entry.set] += count
    row = "{:>6} {:>6} {:>9}  {}"
    print(row.format("core", "policy", "issue-26", "reason"))
    for reason, by_set in sorted(found.items(), key=lambda item: -item[1].total()):
        print(row.format(by_set["core"], by_set["policy"], by_set["issue-26"], reason))


def load_results(path: Path) -> dict[str, list[Outcome]]:
    """A run saved by ``record --results``."""
    return {name: [Outcome(**test) for test in tests]
            for name, tests in json.loads(path.read_text()).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", help="gabbit file names (default: all)")
    parser.add_argument("--store", choices=("sqlite", "postgres", "placement"),
                        default="sqlite", help="placement: Placement 16 itself (the control)")
    parser.add_argument("--results", type=Path, help="count a saved run instead of running")
    parser.add_argument("--reasons", action="store_true",
                        help="count expectations.toml's failures per reason instead")
    args = parser.parse_args(argv)
    if args.reasons:
        print_reasons(harness.load_expectations())
        return 0
    if args.results:
        print_counts(load_results(args.results))
        return 0
    python = harness.python_or_exit()
    names = args.files or harness.list_files(python)
    with tempfile.TemporaryDirectory() as folder:
        print_counts(harness.run_all(python, names, args.store, Path(folder)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
