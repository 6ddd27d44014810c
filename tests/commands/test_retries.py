"""A retry with the same command id returns the first outcome and appends nothing; the same
id with another command is refused, naming both (every command kind, every store)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from allocation_ledger import Ledger
from allocation_ledger.domain.errors import (
    CommandIdReused,
    ConsumerGenerationConflict,
    InsufficientCapacity,
    InvalidRequest,
)
from allocation_ledger.domain.ids import consumer_stream_id
from tests.builders import PROJECT, USER, a_host, new_id, snapshot
from tests.commands.kinds import KINDS, Kind


def replayed(value: Any) -> Any:
    """What a replay of ``value`` returns: the same, flagged."""
    if isinstance(value, list):
        return [replayed(v) for v in value]
    return replace(value, replayed=True) if hasattr(value, "replayed") else value


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_a_retry_returns_the_first_outcome_and_appends_nothing(ledger: Ledger,
                                                               kind: Kind) -> None:
    ctx = kind.setup(ledger)
    cid = f"{kind.name}-{new_id()}"
    first = kind.call(ledger, ctx, cid, 0)
    written = snapshot(ledger)

    again = kind.call(ledger, ctx, cid, 0)

    assert again == replayed(first)
    assert snapshot(ledger) == written
    found = ledger.command(cid)
    assert (found.applied, found.name, found.position) == (True, kind.name, found.position)
    assert found.position is not None and found.events >= (kind.name != "force_release")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_the_same_id_with_another_command_is_refused_naming_both(ledger: Ledger,
                                                                  kind: Kind) -> None:
    ctx = kind.setup(ledger)
    cid = new_id()
    kind.call(ledger, ctx, cid, 0)
    written = snapshot(ledger)

    with pytest.raises(CommandIdReused) as refused:
        kind.call(ledger, ctx, cid, 1)

    assert snapshot(ledger) == written
    err = refused.value
    assert (err.command_id, err.recorded, err.given) == (cid, kind.name, kind.name)
    assert err.recorded_fingerprint != err.given_fingerprint
    assert cid in str(err) and kind.name in str(err)


def test_another_kind_of_command_with_a_used_id_is_refused(ledger: Ledger) -> None:
    host = a_host(ledger)
    vm = new_id()
    ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER,
                 command_id="cmd-1")
    with pytest.raises(CommandIdReused, match=r"already used for claim .* cannot name "
                                              r"release"):
        ledger.release(vm, 1, command_id="cmd-1")
    assert ledger.consumer(vm).generation == 1


def test_a_retry_after_later_changes_returns_the_views_as_of_that_command(
        ledger: Ledger) -> None:
    """Not a conflict: the caller's own success, as it was (generation 1), flagged."""
    host = a_host(ledger)
    vm = new_id()
    first = ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER,
                         command_id="first")
    ledger.claim(vm, {host: {"VCPU": 3}}, 1, project_id=PROJECT, user_id=USER)

    again = ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER,
                         command_id="first")

    assert again == replace(first, replayed=True)
    assert (again.generation, ledger.consumer(vm).generation) == (1, 2)
    with pytest.raises(ConsumerGenerationConflict):  # without the id, a real conflict
        ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER)


def test_a_refused_command_records_nothing_and_its_retry_is_decided_again(
        ledger: Ledger) -> None:
    host = a_host(ledger, vcpu=2)
    vm = new_id()
    with pytest.raises(InsufficientCapacity):
        ledger.claim(vm, {host: {"VCPU": 4}}, None, project_id=PROJECT, user_id=USER,
                     command_id="big")
    assert not ledger.command("big").applied
    ledger.set_inventory(host, "VCPU", {"total": 4}, 1)

    view = ledger.claim(vm, {host: {"VCPU": 4}}, None, project_id=PROJECT, user_id=USER,
                        command_id="big")

    assert (view.generation, view.replayed) == (1, False)
    assert ledger.command("big").applied


def test_a_command_id_may_be_a_uuid_and_is_looked_up_by_either_form(ledger: Ledger) -> None:
    import uuid

    cid = uuid.uuid4()
    host, vm = a_host(ledger), new_id()
    ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER,
                 command_id=cid, request={"actor": "nova-scheduler", "request_id": "req-1"})
    found = ledger.command(str(cid))
    assert found == ledger.command(cid)
    assert (found.applied, found.request["actor"], found.request["request_id"]) == (
        True, "nova-scheduler", "req-1")
    assert sorted((s.kind, s.uuid, s.version) for s in found.streams) == [
        ("consumer", vm, 1), ("provider", host, 3)]


def test_an_unknown_command_is_not_applied(ledger: Ledger) -> None:
    found = ledger.command("never-sent")
    assert (found.applied, found.position, found.streams) == (False, None, ())


@pytest.mark.parametrize("bad", ["", "x" * 256, "tab\there", 42])
def test_a_malformed_command_id_is_refused(ledger: Ledger, bad: Any) -> None:
    host = a_host(ledger)
    written = snapshot(ledger)
    with pytest.raises(InvalidRequest, match="command id"):
        ledger.claim(new_id(), {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER,
                     command_id=bad)
    assert snapshot(ledger) == written


def test_only_a_command_id_the_caller_chose_carries_a_fingerprint(ledger: Ledger) -> None:
    host = a_host(ledger)
    ledger.claim(new_id(), {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER,
                 command_id="chosen")
    vm = new_id()
    ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER)

    chosen = ledger.command("chosen")
    assert chosen.fingerprint is not None and len(chosen.fingerprint) == 64
    int(chosen.fingerprint, 16)  # a SHA-256, in hex
    stored = ledger.store.recorder.select_events(consumer_stream_id(vm))
    made_up = json.loads(stored[-1].state)["request"]["command_id"]
    unnamed = ledger.command(made_up)
    # a fresh id nothing else can name: no retry to tell from another command
    assert (unnamed.applied, unnamed.name, unnamed.fingerprint) == (True, "claim", "")


def test_a_misspelt_option_is_refused_as_python_refuses_an_unknown_keyword(
        ledger: Ledger) -> None:
    """Every command takes its ``request`` and ``command_id`` as ``**options``: a name that
    is neither is a ``TypeError`` naming it, with nothing written."""
    host = a_host(ledger)
    written = snapshot(ledger)
    with pytest.raises(TypeError, match=r"claim.*'comand_id'"):
        ledger.claim(new_id(), {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER,
                     comand_id="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"create_trait.*'requests'"):
        ledger.create_trait("CUSTOM_MISSPELT", requests={"actor": "a"})  # type: ignore[call-arg]
    assert snapshot(ledger) == written
