"""The stream ids are uuid5 of their namespaces (the audit checks a stream's id by number)."""

from __future__ import annotations

import uuid

import pytest

from allocation_ledger.domain import ids

NAMES = ["", "a", "compute-1", "CUSTOM_GPU", "0b6cbd4c-1d7a-4b54-8d3e-39f1f3d0f4a0", "ünï"]


@pytest.mark.parametrize(("make", "namespace"), [
    (ids.provider_stream_id, ids.PROVIDER_NAMESPACE),
    (ids.consumer_stream_id, ids.CONSUMER_NAMESPACE),
    (ids.command_stream_id, ids.COMMAND_NAMESPACE),
    (ids.provider_name_stream_id, ids.PROVIDER_NAME_NAMESPACE),
    (ids.resource_class_stream_id, ids.RESOURCE_CLASS_NAMESPACE),
    (ids.trait_stream_id, ids.TRAIT_NAMESPACE),
])
def test_stream_ids_are_uuid5_of_their_namespace(make: object, namespace: uuid.UUID) -> None:
    for name in NAMES:
        expected = uuid.uuid5(namespace, name)
        assert make(name) == expected  # type: ignore[operator]
        assert ids.uuid5(namespace, name) == expected
        assert ids.uuid5_number(namespace, name) == expected.int


def test_uuid5_refuses_what_the_standard_library_refuses() -> None:
    with pytest.raises(TypeError):
        uuid.uuid5(ids.CONSUMER_NAMESPACE, 7)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ids.uuid5(ids.CONSUMER_NAMESPACE, 7)  # type: ignore[arg-type]
