"""Command inputs at the boundary (``application.inputs``): ids, class names, amounts,
generations and inventory fields are checked before anything is loaded or written."""

from __future__ import annotations

from typing import Any

import pytest

from allocation_ledger.application.inputs import (
    ClaimIn,
    ConsumerWriteIn,
    InventoriesIn,
    InventoryIn,
    ReleaseIn,
    UuidIn,
    parse,
    request_meta,
)
from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.domain.values import MAX_INT, is_valid_resource_class

HOST = "9d0c1a52-2b7e-4c8e-9a51-000000000001"
VM = "9d0c1a52-2b7e-4c8e-9a51-0000000000a1"


def claim_input(**overrides: Any) -> dict[str, Any]:
    """A valid claim input, with ``overrides`` applied."""
    data: dict[str, Any] = {
        "consumer_uuid": VM,
        "allocations": {HOST: {"VCPU": 2}},
        "expected_generation": None,
        "project_id": "project-a",
        "user_id": "user-a",
    }
    return {**data, **overrides}


def refused(model: type[Any], **data: Any) -> InvalidRequest:
    """The :class:`InvalidRequest` that parsing ``data`` raises."""
    with pytest.raises(InvalidRequest) as caught:
        parse(model, **data)
    return caught.value


# -- ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        pytest.param(HOST, HOST, id="canonical"),
        pytest.param(HOST.upper(), HOST, id="upper-case"),
    ],
)
def test_uuids_come_back_canonical(given: str, canonical: str) -> None:
    """One provider or consumer, one spelling: ids are lower-cased UUID strings."""
    assert parse(UuidIn, value=given).value == canonical


@pytest.mark.parametrize(
    "bad",
    ["", "nope", "1234", HOST[:-1], HOST + "0", HOST.replace("9", "g"), 42, None, 1.5],
)
def test_malformed_uuids_are_invalid_requests(bad: object) -> None:
    """Anything that is not a UUID is refused, naming the field."""
    err = refused(UuidIn, value=bad)
    assert err.fields["problems"]
    assert err.fields["problems"][0].startswith("value:")
    assert "UUID" in str(err) or "string" in str(err)


def test_malformed_provider_key_in_allocations_is_refused() -> None:
    """Provider ids inside an allocation are checked as well as the consumer's."""
    err = refused(ClaimIn, **claim_input(allocations={"not-a-uuid": {"VCPU": 1}}))
    assert "malformed UUID 'not-a-uuid'" in str(err)



# -- resource classes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("VCPU", True),
        ("MEMORY_MB", True),
        ("DISK_GB", True),
        ("VGPU", True),
        ("CUSTOM_GPU_A100", True),
        ("CUSTOM_1", True),
        ("vcpu", False),
        ("Vcpu", False),
        ("FOO", False),
        ("CUSTOM-GPU", False),
        ("CUSTOM_gpu", False),
        ("", False),
        (" VCPU", False),
        ("VCPU\n", False),
    ],
)
def test_resource_class_names(name: str, valid: bool) -> None:
    """Standard classes and ``CUSTOM_[A-Z0-9_]+``; anything else is unknown."""
    assert is_valid_resource_class(name) is valid
    data = claim_input(allocations={HOST: {name: 1}})
    if valid:
        assert parse(ClaimIn, **data).allocations == {HOST: {name: 1}}
    else:
        assert "unknown resource class" in str(refused(ClaimIn, **data))


# -- amounts and generations ---------------------------------------------------------------


@pytest.mark.parametrize("amount", [1, 7, MAX_INT])
def test_amounts_in_range_are_accepted(amount: int) -> None:
    """Integers from 1 to 2147483647."""
    assert parse(ClaimIn, **claim_input(allocations={HOST: {"VCPU": amount}})).allocations == {
        HOST: {"VCPU": amount}
    }


@pytest.mark.parametrize(
    "amount",
    [
        pytest.param(0, id="zero"),
        pytest.param(-1, id="negative"),
        pytest.param(MAX_INT + 1, id="above-max-int"),
        pytest.param(1.0, id="float"),
        pytest.param(1.5, id="fraction"),
        pytest.param("1", id="string"),
        pytest.param(True, id="bool"),
        pytest.param(None, id="none"),
    ],
)
def test_bad_amounts_are_invalid_requests(amount: object) -> None:
    """Amounts are strict integers >= 1: no zero, negative, float, string or bool."""
    err = refused(ClaimIn, **claim_input(allocations={HOST: {"VCPU": amount}}))
    assert err.fields["problems"] == [p for p in err.fields["problems"] if "VCPU" in p]
    assert f"allocations.{HOST}.VCPU" in str(err)


@pytest.mark.parametrize("generation", [None, 0, 1, 99])
def test_generations_accepted(generation: int | None) -> None:
    """``None`` (a new or emptied consumer) or an integer >= 0 (0 matches no generation:
    the command decides it is a conflict, DESIGN §3)."""
    assert parse(ReleaseIn, consumer_uuid=VM, expected_generation=generation) == ReleaseIn(
        consumer_uuid=VM, expected_generation=generation
    )


@pytest.mark.parametrize("generation", [-1, True, "1", 1.0])
def test_bad_generations_are_invalid_requests(generation: object) -> None:
    """Generations are strict integers >= 0 (a bool is not a generation)."""
    err = refused(ConsumerWriteIn, **claim_input(expected_generation=generation))
    assert "expected_generation" in str(err)


# -- shapes --------------------------------------------------------------------------------


def test_claim_must_take_something() -> None:
    """A claim with no providers at all is refused; an empty write is a release."""
    assert "allocations" in str(refused(ClaimIn, **claim_input(allocations={})))
    assert parse(ConsumerWriteIn, **claim_input(allocations={})).allocations == {}


def test_unknown_fields_are_refused() -> None:
    """A misspelt field is an error, not silently ignored."""
    assert "expected_gen" in str(refused(ClaimIn, **claim_input(expected_gen=1)))


def test_every_problem_is_listed_at_once() -> None:
    """A caller fixes everything in one go: all problems, each with its field path."""
    err = refused(
        ClaimIn,
        **claim_input(consumer_uuid="nope", allocations={HOST: {"VCPU": 0}}, user_id=""),
    )
    problems = err.fields["problems"]
    assert len(problems) == 3
    assert {p.split(":")[0] for p in problems} == {
        "consumer_uuid", f"allocations.{HOST}.VCPU", "user_id"
    }
    assert str(err).startswith("invalid claim: ")
    assert err.to_dict()["error"] == "InvalidRequest"


# -- inventories ---------------------------------------------------------------------------


def test_inventory_defaults() -> None:
    """Only ``total`` is required."""
    assert parse(InventoryIn, total=4).model_dump() == {
        "total": 4, "reserved": 0, "min_unit": 1, "max_unit": MAX_INT, "step_size": 1,
        "allocation_ratio": 1.0,
    }


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({}, id="no-total"),
        pytest.param({"total": 4.0}, id="float-total"),
        pytest.param({"total": "4"}, id="string-total"),
        pytest.param({"total": True}, id="bool-total"),
        pytest.param({"total": 4, "reserved": 1.0}, id="float-reserved"),
        pytest.param({"total": 4, "step_size": "2"}, id="string-step"),
        pytest.param({"total": 4, "generation": 1}, id="unknown-field"),
    ],
)
def test_inventory_fields_are_strict(fields: dict[str, Any]) -> None:
    """Integer fields take integers only, and unknown fields are refused."""
    refused(InventoryIn, **fields)


def test_inventories_name_known_classes() -> None:
    """Inventory keys are resource class names too."""
    err = refused(InventoriesIn, provider_uuid=HOST, inventories={"vcpu": {"total": 4}},
                  expected_generation=1)
    assert "unknown resource class 'vcpu'" in str(err)


# -- request metadata ----------------------------------------------------------------------


def test_request_meta_keeps_what_was_given() -> None:
    """Empty values are dropped so events stay small; unknown keys are refused; every call
    adds a fresh command id."""

    def given(meta: dict[str, str]) -> dict[str, str]:
        assert len(meta.pop("command_id")) == 32
        return meta

    assert given(request_meta(None)) == {}
    assert given(request_meta({"actor": "ops", "reason": ""})) == {"actor": "ops"}
    assert given(request_meta({"actor": "a", "request_id": "r", "reason": "why"})) == {
        "actor": "a", "request_id": "r", "reason": "why"
    }
    assert request_meta(None)["command_id"] != request_meta(None)["command_id"]
    with pytest.raises(InvalidRequest):
        request_meta({"who": "ops"})
    with pytest.raises(InvalidRequest):
        request_meta({"actor": "x" * 256})
