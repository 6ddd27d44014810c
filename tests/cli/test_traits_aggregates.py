"""The command line over traits and aggregates: ``list providers --required/--member-of
/--in-tree`` filter as Placement's listing does; ``history`` and ``state-at`` show trait and
aggregate changes."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.cli import main
from tests.builders import a_host, new_id

AVX2 = "HW_CPU_X86_AVX2"


@pytest.fixture
def ledger(durable_url: str) -> Iterator[Ledger]:
    """A ledger the command line opens too (SQLite, PostgreSQL)."""
    with open_ledger(durable_url) as opened:
        yield opened


@pytest.fixture
def url(durable_url: str) -> str:
    return durable_url


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys: pytest.CaptureFixture[str], url: str, *filters: str) -> set[str]:
    code, out, err = run(capsys, "list", "providers", "--url", url, "--json", *filters)
    assert code == 0, err
    return {p["uuid"] for p in json.loads(out)}


def test_list_providers_by_traits_aggregates_and_tree(
        ledger: Ledger, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    ledger.create_trait("CUSTOM_GOLD")
    agg1, agg2 = new_id(), new_id()
    a, b = a_host(ledger), a_host(ledger)
    child = a_host(ledger, parent=a)
    ledger.set_traits(a, [AVX2, "CUSTOM_GOLD"], ledger.provider(a).generation)
    ledger.set_traits(b, [AVX2], ledger.provider(b).generation)
    ledger.set_aggregates(a, [agg1], ledger.provider(a).generation)
    ledger.set_aggregates(b, [agg1, agg2], ledger.provider(b).generation)
    assert listed(capsys, url) == {a, b, child}
    assert listed(capsys, url, "--required", AVX2) == {a, b}
    assert listed(capsys, url, "--required", AVX2, "--required", "!CUSTOM_GOLD") == {b}
    assert listed(capsys, url, "--required", "in:CUSTOM_GOLD,HW_CPU_X86_SSE") == {a}
    assert listed(capsys, url, "--member-of", agg2) == {b}
    assert listed(capsys, url, "--member-of", f"in:{agg1},{agg2}",
                  "--member-of", f"!{agg2}") == {a}
    assert listed(capsys, url, "--in-tree", child) == {a, child}
    _, out, _ = run(capsys, "list", "providers", "--url", url, "--json", "--required", AVX2)
    shown = {p["uuid"]: p for p in json.loads(out)}
    assert shown[a]["traits"] == sorted([AVX2, "CUSTOM_GOLD"])
    assert shown[b]["aggregates"] == sorted([agg1, agg2])


def test_list_providers_with_an_unknown_trait_says_so(
        ledger: Ledger, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    a_host(ledger)
    code, _out, err = run(capsys, "list", "providers", "--url", url, "--required",
                         "CUSTOM_NEVER_MADE")
    assert code != 0 and "No such trait(s): CUSTOM_NEVER_MADE" in err
    assert len(err.strip().splitlines()) == 1


def test_history_shows_who_gave_and_took_a_trait(
        ledger: Ledger, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    ledger.create_trait("CUSTOM_FAST", request={"actor": "ops"})
    host = a_host(ledger)
    view = ledger.set_traits(host, [AVX2, "CUSTOM_FAST"], ledger.provider(host).generation,
                             request={"actor": "nova-compute", "reason": "cpu flags"})
    agg = new_id()
    view = ledger.set_aggregates(host, [agg], view.generation, request={"actor": "nova-api"})
    ledger.set_traits(host, ["CUSTOM_FAST"], view.generation,
                      request={"actor": "nova-compute", "reason": "avx2 off"})
    code, out, err = run(capsys, "history", "provider", host, "--url", url)
    assert code == 0, err
    assert f"traits +{AVX2}" in out and "traits +CUSTOM_FAST" in out
    assert f"traits -{AVX2}" in out and "(avx2 off)" in out
    assert f"aggregates +{agg}" in out and "nova-api" in out
    code, out, err = run(capsys, "history", "provider", host, "--url", url, "--json")
    changes = [entry["changes"] for entry in json.loads(out)]
    assert {"traits": ["CUSTOM_FAST"], "traits_added": [],
            "traits_removed": [AVX2]} in changes
    code, out, err = run(capsys, "history", "trait", "CUSTOM_FAST", "--url", url)
    assert code == 0, err
    assert "trait CUSTOM_FAST created" in out and "ops" in out


def test_state_at_shows_traits_and_aggregates(
        ledger: Ledger, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    host = a_host(ledger)
    agg = new_id()
    view = ledger.set_traits(host, [AVX2], ledger.provider(host).generation)
    ledger.set_aggregates(host, [agg], view.generation)
    code, out, err = run(capsys, "state-at", "provider", host, "--url", url, "--json")
    assert code == 0, err
    shown = json.loads(out)
    found = shown.get("provider", shown)
    text = json.dumps(found)
    assert AVX2 in text and agg in text


def test_show_provider_shows_traits_and_aggregates(
        ledger: Ledger, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    host = a_host(ledger)
    agg = new_id()
    view = ledger.set_traits(host, [AVX2], ledger.provider(host).generation)
    ledger.set_aggregates(host, [agg], view.generation)
    code, out, err = run(capsys, "show", "provider", host, "--url", url)
    assert code == 0, err
    assert f"traits       {AVX2}" in out and f"aggregates   {agg}" in out
    code, out, err = run(capsys, "show", "provider", host, "--url", url, "--json")
    shown = json.loads(out)
    tree = shown.get(host) or next(iter(shown.values()))
    assert json.dumps(shown).count(AVX2) == 1 and agg in json.dumps(tree)
