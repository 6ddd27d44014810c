"""The gabbit ratchet's own rules: what counts as a difference from the expectations, the
expectations file written and read back, and the reasons guessed for a failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gabbits import harness, reasons, record
from tests.gabbits.harness import FileExpectation, Outcome

PASS, FAIL = "passed", "failed"


def run(*results: tuple[str, str]) -> list[Outcome]:
    return [Outcome(name, outcome) for name, outcome in results]


def test_a_run_that_matches_its_expectation_differs_in_nothing() -> None:
    expected = FileExpectation(set="core", tests=3, failing={"b": "defect: x"})
    assert harness.differences(expected, run(("a", PASS), ("b", FAIL), ("c", "xfail"))) == []


def test_a_failure_that_is_not_listed_is_a_difference() -> None:
    expected = FileExpectation(set="core", tests=2)
    found = harness.differences(expected, run(("a", PASS), ("b", FAIL)))
    assert found == ["'b': expected passed, got failed"]


def test_a_listed_failure_that_now_passes_is_a_difference() -> None:
    expected = FileExpectation(set="core", tests=1, failing={"a": "not built: traits"})
    found = harness.differences(expected, run(("a", PASS)))
    assert found == ["'a': expected failed (not built: traits), got passed"]


def test_a_file_that_could_not_run_and_now_runs_is_a_difference() -> None:
    expected = FileExpectation(set="issue-26", tests=1, cannot_run="not built: PUT /traits")
    assert harness.differences(expected, run(("a", FAIL))) == [
        "'a': expected cannot-run (not built: PUT /traits), got failed"]
    assert harness.differences(expected, run(("a", "cannot-run"))) == []


def test_a_changed_file_is_a_difference() -> None:
    expected = FileExpectation(set="core", tests=2, failing={"gone": "defect: x"})
    found = harness.differences(expected, run(("a", PASS)))
    assert found == ["'gone': listed as failing but not in the file",
                     "the file has 1 tests, the expectations say 2"]


def test_the_expectations_file_reads_back_as_written(tmp_path: Path) -> None:
    written = {
        "a.yaml": FileExpectation(set="core", tests=2,
                                  failing={'say "hi" \\ there': "difference: error text"}),
        "traits.yaml": FileExpectation(set="issue-26", tests=5,
                                       cannot_run="not built: PUT /traits/{name} (404)"),
    }
    path = tmp_path / "expectations.toml"
    path.write_text(record.render(written))
    assert harness.load_expectations(path) == written


def test_recording_keeps_a_reason_written_by_hand_and_guesses_new_ones() -> None:
    before = FileExpectation(set="core", tests=3, failing={"b": "defect: named by hand"})
    outcomes = [Outcome("a", PASS), Outcome("b", FAIL, detail="whatever"),
                Outcome("c", FAIL, "GET", "/traits", "AssertionError: '404' not found in "
                        "['200']")]
    found = record.expectation("usage.yaml", outcomes, before)
    assert found.failing == {"b": "defect: named by hand", "c": "not built: traits"}


@pytest.mark.parametrize(("url", "detail", "earlier", "reason"), [
    ("/allocation_candidates?resources=VCPU:1", "AssertionError: '404' not found in ['200']",
     False, "not built: allocation candidates"),
    ("/resource_providers", "AssertionError: '200' not found in ['403']", False,
     reasons.NO_POLICY),
    ("/resource_providers/x/inventories",
     "AssertionError: '409' not found in ['200'] … resource provider generation conflict",
     False, reasons.GENERATION_AT_CREATION),
    ("/allocations/x", "AssertionError: 'JSON does not validate' not found in {…}", False,
     "difference: error text (Placement's reads 'JSON does not validate') (issue 27 #3)"),
    ("/usages", "AssertionError: 3 != 0 : Unable to match $.usages.`len` as 3, got 0", True,
     "cascade: follows an earlier failed write in this file"),
])
def test_a_failure_gets_the_reason_of_the_first_rule_it_matches(
        url: str, detail: str, earlier: bool, reason: str) -> None:
    assert reasons.guess("x.yaml", Outcome("t", FAIL, "GET", url, detail), earlier) == reason
