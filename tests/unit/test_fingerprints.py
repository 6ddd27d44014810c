"""Command fingerprints are stored in every command record, so they never change: a retry of
a command recorded by an older release must still be recognised as the same command (and a
different command under a reused id refused). These values were computed by the ledger
before its fingerprint was made cheaper (issue 16); the request metadata, validated once
per distinct request, must also be what validating it every time gave."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.application.command_ids import _keyed, fingerprint, handle, intent
from allocation_ledger.application.handlers import claims
from allocation_ledger.application.inputs import (
    ClaimIn,
    ClassIn,
    DevicesSetIn,
    InventoriesIn,
    MoveIn,
    ProviderIn,
    ReleaseIn,
    RequestIn,
    ResolveIn,
    WritesIn,
    parse,
    request_meta,
)
from allocation_ledger.domain.errors import InvalidRequest
from tests.builders import a_host, new_id

H = "0b8e6c4e-2f0e-4a43-9c86-5d2f3b0c9a11"
H2 = "7d6f5e4c-3b2a-4190-8f7e-6d5c4b3a2910"
C = "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"
M = "9f8e7d6c-5b4a-4392-a1f0-e9d8c7b6a5f4"
REQUEST = {"actor": "a", "reason": "r\nx"}


def _cases() -> dict[str, tuple[str, list[Any]]]:
    return {
        "claim": ("claim", [parse(
            ClaimIn, consumer_uuid=C, allocations={H: {"VCPU": 1, "MEMORY_MB": 256}},
            expected_generation=None, project_id="p", user_id="u", devices={})]),
        "claim_devices_unicode": ("claim", [parse(
            ClaimIn, consumer_uuid=C.upper(), allocations={H: {"VGPU": 2}, H2: {"DISK_GB": 10}},
            expected_generation=3, project_id="prøject ☃", user_id="ü",
            consumer_type="MIGRATION", devices={H: {"VGPU": ["b", "a"]}})]),
        "writes": ("write_allocations", list(parse(WritesIn, writes=[
            {"consumer_uuid": C, "allocations": {}, "expected_generation": 1,
             "project_id": "p", "user_id": "u"},
            {"consumer_uuid": M, "allocations": {H: {"CUSTOM_X": 5}},
             "expected_generation": None, "project_id": "p\u00e9", "user_id": "u"},
        ]).writes)),
        "register": ("register_provider", [
            parse(ProviderIn, provider_uuid=H, name="host \u2603", parent_uuid=None),
            parse(InventoriesIn, provider_uuid=H, inventories={
                "VCPU": {"total": 8, "allocation_ratio": 16.0},
                "MEMORY_MB": {"total": 4096, "reserved": 512, "allocation_ratio": 1.5e16}},
                expected_generation=1)]),
        "register_noinv": ("register_provider", [
            parse(ProviderIn, provider_uuid=H, name="h", parent_uuid=H2), None]),
        "set_inventory": ("set_inventory", [
            parse(ClassIn, provider_uuid=H, resource_class="VCPU", expected_generation=2),
            {"VCPU": {"total": 4, "reserved": 0, "min_unit": 1, "max_unit": 4, "step_size": 1,
                      "allocation_ratio": 0.1}}]),
        "devices": ("set_devices", [parse(DevicesSetIn, provider_uuid=H, resource_class="VGPU",
                                          device_ids=["x", "y"], expected_generation=5)]),
        "swap": ("swap", [parse(MoveIn, instance_uuid=C, migration_uuid=M,
                                expected_generation=1, destination={H2: {"VCPU": 1}}),
                          "live-migration"]),
        "revert": ("revert", [parse(ResolveIn, migration_uuid=M, expected_generation=None,
                                    instance_generation=4)]),
        "release": ("release", [parse(ReleaseIn, consumer_uuid=C, expected_generation=2**62)]),
        "raw_mapping": ("x", [{None: 1, 2: [(1, "\x7f")], "b": {True: 2.5}}, 7, "s", None]),
    }


STORED = {
    "claim": "3cc26057ce30c86c1f1874d8a9a376463051fcfaef789cd4da2a8e8924c9f3c0",
    "claim_devices_unicode":
        "03f8dd7d9b829cd0f5fc67e5a1465a9a0968ef80544755d6228b5109446d6c86",
    "writes": "28893f1d4e6be6f9a89ef1537f324afe5ba0e064057041d60d6ae89e908f8f47",
    "register": "6f89145f8bd7270f2911ea7b56ab0a0e0bad04cb46cbeeddaf450e6b2ae3b72b",
    "register_noinv": "73eb2177b2d8fda87bfeb555969032b1cf59c505154cfc57765ef19134c8b322",
    "set_inventory": "ae22d606acf37c2b186d1fae55cb44b36f06a8d779cc0729f81ef92e5aa15d38",
    "devices": "09306f995ab12aa03ac77e90b2668466cae76bb16959b226ba86ff0b27b52ebe",
    "swap": "f48c39692e3da5e443732445d58ece2e77ff12109021b6356a4785ba9e569ffc",
    "revert": "f3c1fe8678bcc5356a0661012f5f566cf81b7bb3e0194c8023b6aba9f6144544",
    "release": "9adf08110f4e5f36e6df7a2710dd8f9f180488c0c40a25e2dc6c583c53004a6b",
    "raw_mapping": "265613979bc6665341c3a207e28a507f99a6cba26468f4bbb07166e5481284f2",
}


@pytest.mark.parametrize("case", sorted(STORED))
def test_fingerprints_are_the_stored_ones(case: str) -> None:
    name, args = _cases()[case]
    assert intent(name, "id", REQUEST, *args).fingerprint == STORED[case]


@pytest.mark.parametrize("case", sorted(STORED))
def test_a_model_dump_needs_no_keyed_pass(case: str) -> None:
    """Why the fingerprint may skip ``_keyed`` for models: it changes none of their dumps."""
    for arg in _cases()[case][1]:
        if hasattr(arg, "model_dump"):
            dumped = arg.model_dump(mode="json")
            assert _keyed(dumped) == dumped


def _validated_every_time(request: Any) -> dict[str, str]:
    model = request if isinstance(request, RequestIn) else RequestIn.model_validate(request)
    return {k: v for k, v in model.model_dump().items() if v}


@pytest.mark.parametrize("request_", [
    {"actor": "a", "reason": "r\nx"}, {"request_id": "req-1"}, {"actor": "", "reason": ""},
    {}, {"reason": "tabs\tand\nlines", "actor": "ä"}, RequestIn(actor="b"),
])
def test_request_metadata_is_what_validating_every_time_gave(request_: Any) -> None:
    for _ in range(2):  # the second time from what was kept
        meta = request_meta(request_, "cid")
        assert meta == {**_validated_every_time(request_), "command_id": "cid"}
        assert list(meta) == [*_validated_every_time(request_), "command_id"]
        meta["actor"] = "changed by a caller"  # changes nothing kept
    assert request_meta(request_, "cid").get("actor") != "changed by a caller"


@pytest.mark.parametrize("request_", [
    {"actor": "a\x00"}, {"actor": "x" * 256}, {"who": "a"}, {"actor": 1}, {1: "a"},
])
def test_a_bad_request_is_refused_every_time(request_: Any) -> None:
    for _ in range(2):
        with pytest.raises(InvalidRequest):
            request_meta(request_, "cid")


def test_a_recorded_command_keeps_the_fingerprint_of_its_arguments_as_given() -> None:
    """The fingerprint is taken when the intent is made, before the handler runs: a handler
    that changed a mutable part of its validated input could not change what the record
    says was asked."""
    with open_ledger("memory://fingerprint-timing") as ledger:
        host = a_host(ledger, vcpu=8)
        cmd = parse(ClaimIn, consumer_uuid=new_id(), allocations={host: {"VCPU": 1}},
                    expected_generation=None, project_id="p", user_id="u", devices={})
        it = intent("claim", "fingerprint-timing-1", None, cmd)
        asked = fingerprint("claim", (cmd,))

        def changing(uow: Any, command: ClaimIn) -> object:
            command.allocations[host]["VCPU"] = 2  # a dict inside the frozen model
            return claims.claim(uow, command)

        handle(ledger.store, ledger.policy, changing, cmd, it, lambda _: None)
        assert ledger.command("fingerprint-timing-1").fingerprint == asked
        assert fingerprint("claim", (cmd,)) != asked  # the input did change


def _reference(name: str, args: list[Any]) -> str:
    """The fingerprint as the standard library's encoder alone writes it."""
    canonical = json.dumps([name, args], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


EVERY_ASCII = "".join(map(chr, range(128)))


@pytest.mark.parametrize("args", [
    [EVERY_ASCII], ["\x7f"], ["tab\there", "line\nbreak", "quote\"back\\slash/"],
    [{"b": 1, "B": 2, "_": 3, "~": 4, "a": {"z": [], "y": {}}, "": None}],
    [{"k": [True, False, None, 0, -1, 2**63 - 1, -(2**63), 2**64 - 1]}],
    [2**64], [{"x": 1.5}], ["ü"], [{"\u2028": "\x7f"}],
])
def test_the_fingerprint_is_what_the_standard_library_writes(args: list[Any]) -> None:
    """Plain ASCII JSON is written by ``orjson``, anything else by the standard library: the
    bytes hashed are the same either way (a DEL, which ``ensure_ascii`` escapes and
    ``orjson`` does not, among them)."""
    assert fingerprint("x", args) == _reference("x", args)
