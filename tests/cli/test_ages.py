"""Ages of moves (``--stale-after``, ``older_than_seconds``, ``stale_after``): anything from
0 to ten years is taken; a larger, infinite or NaN one is refused as bad input (the CLI in
one line, exit 2; the API with ``InvalidRequest``), never an ``OverflowError`` from the date
arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.audit import audit
from allocation_ledger.cli import main
from allocation_ledger.cli.values import MAX_SECONDS
from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.domain.migration import MAX_AGE_SECONDS
from tests.builders import a_host

TOO_OLD = ["1e300", str(2**63), str(MAX_SECONDS + 1), "inf", "nan"]
COMMANDS = [["audit", "--projections", "off"], ["list", "migrations"],
            ["repair", "--action", "revert", "--dry-run"], ["metrics"]]


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A SQLite ledger with one host."""
    found = f"sqlite:///{tmp_path / 'ledger.db'}"
    with open_ledger(found) as ledger:
        a_host(ledger)
    return found


@pytest.mark.parametrize("age", TOO_OLD)
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_the_cli_refuses_an_age_past_ten_years_in_one_line(
        command: list[str], age: str, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([*command, "--url", url, "--stale-after", age])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()]
    assert "Overflow" not in err and "unexpected" not in err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_the_cli_takes_ten_years(command: list[str], url: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--url", url, "--stale-after", str(MAX_SECONDS)]) == 0


@pytest.mark.parametrize("age", [2**63, 1e300, float("inf"), float("nan"), -1.0,
                                 MAX_AGE_SECONDS + 1])
def test_the_api_refuses_an_age_past_ten_years(age: float) -> None:
    with open_ledger("memory://", read_side=True) as ledger:
        with pytest.raises(InvalidRequest):
            ledger.migrations_in_flight(older_than_seconds=age)
        with pytest.raises(InvalidRequest):
            audit(ledger.store, stale_after=age)
        with pytest.raises(InvalidRequest):
            ledger.reads.migrations_in_flight(older_than_seconds=age)


def test_the_api_takes_ten_years() -> None:
    with open_ledger("memory://", read_side=True) as ledger:
        assert ledger.migrations_in_flight(older_than_seconds=MAX_AGE_SECONDS) == []
        assert audit(ledger.store, stale_after=MAX_AGE_SECONDS).ok
        assert list(ledger.reads.migrations_in_flight(older_than_seconds=MAX_AGE_SECONDS)) == []


def test_the_cli_limit_is_the_domains() -> None:
    assert MAX_SECONDS == MAX_AGE_SECONDS
