"""Regenerate ``tests/gabbits/expectations.toml`` from a run of every gabbit file.

    .venv/bin/python -m tests.gabbits.record                 # all files, SQLite
    .venv/bin/python -m tests.gabbits.record traits.yaml     # only these files
    .venv/bin/python -m tests.gabbits.record --store postgres
    .venv/bin/python -m tests.gabbits.record --reclassify --replay run.json  # a saved run

Each file runs against a fresh server over a fresh store (as the ratchet does). A test that
still fails keeps the reason already written for it; a newly failing one gets the reason
``reasons.guess`` finds (look at ``unclassified`` and ``cascade`` ones and refine them by
hand; ``--reclassify`` guesses them all afresh); tests that pass now drop out. The counts
are printed as ``counts`` prints them.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import asdict
from pathlib import Path

from tests.gabbits import harness, reasons
from tests.gabbits.counts import load_results, print_counts
from tests.gabbits.harness import EXPECTATIONS, FileExpectation, Outcome

HEADER = """\
# Placement 16.0.0's own gabbits (placement/tests/functional/gabbits) against a real
# `allocation-ledger serve`: per file, the tests that fail today and why, or why the whole
# file cannot run. tests/gabbits/test_gabbits.py fails when a test not listed here fails and
# when a listed one passes. Regenerate with:
#     .venv/bin/python -m tests.gabbits.record
# (reasons already written are kept; see docs/placement-differences.md for the categories).
"""


def expectation(name: str, outcomes: list[Outcome], before: FileExpectation | None
                ) -> FileExpectation:
    """The expectation that matches this run, keeping earlier reasons where they apply."""
    found = FileExpectation(set=harness.set_of(name), tests=len(outcomes))
    if outcomes and all(o.outcome == "cannot-run" for o in outcomes):
        found.cannot_run = ((before.cannot_run if before and before.cannot_run else "")
                            or reasons.fixture_reason(outcomes[0]))
        return found
    earlier_failed = False
    for outcome in outcomes:
        if not outcome.passed:
            kept = before.failing.get(outcome.name) if before else None
            found.failing[outcome.name] = kept or reasons.guess(name, outcome, earlier_failed)
            earlier_failed = earlier_failed or outcome.method not in ("GET", "HEAD")
    return found


def quote(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text, ensure_ascii=False)


def render(expectations: dict[str, FileExpectation]) -> str:
    """The expectations file's text, files in name order, tests in file order."""
    lines = [HEADER]
    for name in sorted(expectations):
        entry = expectations[name]
        lines.append(f"[files.{quote(name)}]")
        lines.append(f"set = {quote(entry.set)}")
        lines.append(f"tests = {entry.tests}")
        if entry.cannot_run:
            lines.append(f"cannot_run = {quote(entry.cannot_run)}")
        if entry.failing:
            lines.append(f"[files.{quote(name)}.failing]")
            lines += [f"{quote(test)} = {quote(why)}" for test, why in entry.failing.items()]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", help="gabbit file names (default: all)")
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--results", type=Path, help="also write every outcome as JSON here")
    parser.add_argument("--reclassify", action="store_true",
                        help="guess every reason afresh instead of keeping those written")
    parser.add_argument("--replay", type=Path,
                        help="record from a run saved with --results instead of running")
    args = parser.parse_args(argv)
    before = harness.load_expectations() if EXPECTATIONS.exists() else {}
    kept = {} if args.reclassify else before
    if args.replay:
        results = load_results(args.replay)
    else:
        python = harness.python_or_exit()
        names = args.files or harness.list_files(python)
        with tempfile.TemporaryDirectory() as folder:
            results = harness.run_all(python, names, args.store, Path(folder))
    after = dict(before)
    after.update({name: expectation(name, outcomes, kept.get(name))
                  for name, outcomes in results.items()})
    EXPECTATIONS.write_text(render(after))
    if args.results:
        args.results.write_text(harness.dump(
            {name: [asdict(o) for o in outcomes] for name, outcomes in results.items()}))
    print_counts(results)
    print(f"wrote {EXPECTATIONS.relative_to(harness.ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
