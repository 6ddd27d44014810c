"""The package as a dependency: every error importable from ``allocation_ledger``, fields as
typed attributes that survive a process boundary, the service imported only on demand."""

from __future__ import annotations

import inspect
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import allocation_ledger
from allocation_ledger.domain import errors

ERROR_CLASSES = [cls for _, cls in inspect.getmembers(errors, inspect.isclass)
                 if issubclass(cls, errors.LedgerError)]


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_every_error_is_exported_from_the_package(cls: type[errors.LedgerError]) -> None:
    assert getattr(allocation_ledger, cls.__name__) is cls
    assert cls.__name__ in allocation_ledger.__all__


def test_fields_are_attributes_and_survive_pickling() -> None:
    err = errors.InsufficientCapacity("rp-1", "VCPU", requested=3, used=14, capacity=16)
    assert (err.free, err.used, err.capacity) == (2, 14, 16)
    assert err.fields == {"provider_uuid": "rp-1", "resource_class": "VCPU", "requested": 3,
                          "used": 14, "capacity": 16, "free": 2}
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is errors.InsufficientCapacity
    assert (back.free, back.to_dict(), str(back)) == (2, err.to_dict(), str(err))


def test_declared_fields_are_annotated_on_their_class() -> None:
    for cls in ERROR_CLASSES:
        annotated = set()
        for klass in cls.__mro__:
            annotated |= set(getattr(klass, "__annotations__", {}))
        assert set(cls.FIELDS) <= annotated, cls.__name__


def test_untyped_extra_fields_of_a_plain_invalid_request() -> None:
    err = errors.InvalidRequest("bad url", url="x://")
    assert pickle.loads(pickle.dumps(err)).to_dict() == {
        "error": "InvalidRequest", "message": "bad url", "url": "x://"}


def test_importing_the_package_leaves_the_store_unimported() -> None:
    code = ("import sys, allocation_ledger; "
            "print(int('eventsourcing' in sys.modules), int('psycopg' in sys.modules)); "
            "allocation_ledger.open_ledger; print(int('psycopg' in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["0", "0", "1"]


def test_the_package_ships_its_type_marker_and_licence() -> None:
    root = Path(allocation_ledger.__file__).parent
    assert (root / "py.typed").is_file()
    assert "Apache License" in (root.parent.parent / "LICENSE").read_text()
