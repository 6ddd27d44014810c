"""Custom resource classes through the service API, on every store: created, deleted,
created again on the same stream, renamed; the audit and the read side take their events."""

from __future__ import annotations

from pathlib import Path
from uuid import uuid4

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.audit import audit
from allocation_ledger.domain.errors import (
    InvalidRequest,
    ResourceClassExists,
    ResourceClassNotFound,
)
from allocation_ledger.domain.ids import resource_class_stream_id
from allocation_ledger.domain.resource_class import ResourceClass
from tests.builders import a_host
from tests.stores import store_url


def _name() -> str:
    return f"CUSTOM_{uuid4().hex.upper()}"


def test_a_class_is_created_once(ledger: Ledger) -> None:
    name = _name()
    assert not ledger.resource_class_exists(name)
    assert ledger.create_resource_class(name) is True
    assert ledger.resource_class_exists(name)
    with pytest.raises(ResourceClassExists, match=name):
        ledger.create_resource_class(name)
    assert ledger.create_resource_class(name, exist_ok=True) is False
    assert name in ledger.resource_classes()


def test_a_deleted_class_is_created_again_on_its_stream(ledger: Ledger) -> None:
    name = _name()
    ledger.create_resource_class(name)
    ledger.delete_resource_class(name)
    assert not ledger.resource_class_exists(name)
    assert name not in ledger.resource_classes()
    with pytest.raises(ResourceClassNotFound, match=f"No such resource class {name}"):
        ledger.delete_resource_class(name)
    assert ledger.create_resource_class(name, exist_ok=True) is True
    found = ledger.store.get(resource_class_stream_id(name))
    assert isinstance(found, ResourceClass) and found.live and found.version == 3


def test_a_class_is_renamed_in_one_append(ledger: Ledger) -> None:
    old, new = _name(), _name()
    ledger.create_resource_class(old)
    before = ledger.store.recorder.max_notification_id() or 0
    ledger.rename_resource_class(old, new)
    # the old name deleted, the new one created, and the command's record
    assert (ledger.store.recorder.max_notification_id() or 0) - before == 3
    assert not ledger.resource_class_exists(old) and ledger.resource_class_exists(new)
    with pytest.raises(ResourceClassExists):
        ledger.rename_resource_class(_name(), new)


@pytest.mark.parametrize("name", ["VCPU", "GOLD", "CUSTOM_lower"])
def test_only_custom_classes_are_created(ledger: Ledger, name: str) -> None:
    with pytest.raises(InvalidRequest):
        ledger.create_resource_class(name)


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_the_audit_and_the_read_side_take_class_events(kind: str, tmp_path: Path) -> None:
    with store_url(kind, tmp_path) as url, open_ledger(url, read_side=True) as ledger:
        name = _name()
        ledger.create_resource_class(name)
        host = a_host(ledger, vcpu=4)
        ledger.delete_resource_class(name)
        ledger.create_resource_class(name)
        assert {u.provider_uuid for u in ledger.reads.host_usage()} >= {host}
        report = audit(ledger.store)
        assert report.findings == [] and report.ok
