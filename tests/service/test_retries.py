"""The ledger as it was just before a recorded command (application/retries.py), on every
store: what a retried request decides on, so it sends the same command again."""

from __future__ import annotations

import pytest

from allocation_ledger import Ledger
from allocation_ledger.application.retries import as_before
from allocation_ledger.domain.errors import ProviderNotFound
from tests.builders import new_id


def test_an_unknown_command_id_leaves_the_ledger_as_it_is(ledger: Ledger) -> None:
    assert as_before(ledger, f"never-{new_id()}") is ledger


def test_before_a_registration_the_provider_is_absent(ledger: Ledger) -> None:
    """The new stream got two events (registered, inventory set): both are the command's."""
    host, key = new_id(), f"k-{new_id()}"
    ledger.register_provider(host, f"h-{host}", inventories={"VCPU": {"total": 4}},
                             command_id=key)
    with pytest.raises(ProviderNotFound):
        as_before(ledger, key).provider(host)
    assert ledger.provider(host).inventories


def test_before_a_child_the_parent_has_no_child(ledger: Ledger) -> None:
    parent, child, key = new_id(), new_id(), f"k-{new_id()}"
    ledger.register_provider(parent, f"p-{parent}")
    ledger.register_provider(child, f"c-{child}", parent_uuid=parent, command_id=key)
    then = as_before(ledger, key).provider(parent)
    assert then.children == () and ledger.provider(parent).children == (child,)
    assert then.generation == ledger.provider(parent).generation  # not a change (Placement)


def test_before_an_inventory_change_the_generation_is_the_one_it_named(
        ledger: Ledger) -> None:
    host, key = new_id(), f"k-{new_id()}"
    view = ledger.register_provider(host, f"h-{host}")
    ledger.set_inventories(host, {"VCPU": {"total": 4}}, view.generation, command_id=key)
    ledger.set_inventories(host, {"VCPU": {"total": 8}}, ledger.provider(host).generation)
    then = as_before(ledger, key).provider(host)
    assert then.generation == view.generation and then.inventories == {}
