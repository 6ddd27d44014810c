"""The bad inputs issue 13 found, one by one, on every store: each is an
:class:`InvalidRequest` naming the field and the value, and nothing is appended."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from allocation_ledger import Ledger
from allocation_ledger.application.inputs import MAX_DEVICE_IDS
from allocation_ledger.domain.errors import InvalidRequest
from tests.builders import PROJECT, USER, a_host, new_id
from tests.hostile.fuzzing import World

Case = Callable[[Ledger, World], Any]


def claim(ledger: Ledger, w: World, **overrides: Any) -> Any:
    """A valid claim for a new consumer, with ``overrides``."""
    kwargs: dict[str, Any] = {"project_id": PROJECT, "user_id": USER, **overrides}
    return ledger.claim(new_id(), {w.host: {"VCPU": 1}}, None, **kwargs)


CASES: list[tuple[str, Case, str]] = [
    ("nul project", lambda led, w: claim(led, w, project_id="a\x00b"),
     "project_id: control character U+0000 at index 1 of 'a\\x00b'"),
    ("nul user", lambda led, w: claim(led, w, user_id="\x00"), "user_id: control character U+0000"),
    ("nul actor", lambda led, w: claim(led, w, request={"actor": "a\x00"}),
     "actor: control character U+0000"),
    ("newline request id", lambda led, w: claim(led, w, request={"request_id": "r\n1"}),
     "request_id: control character U+000A"),
    ("nul provider name", lambda led, w: led.register_provider(new_id(), "host\x00"),
     "name: control character U+0000"),
    ("nul device id", lambda led, w: led.set_devices(w.gpu, "VGPU", ["gpu-0\x00"], 2),
     "device_ids.0: control character U+0000"),
    ("lone surrogate", lambda led, w: claim(led, w, project_id="\ud800"), "project_id:"),
    ("bytes as text", lambda led, w: claim(led, w, user_id=b"u"),
     "user_id: Input should be a valid"),
    ("request as str", lambda led, w: claim(led, w, request="abc"),
     "request must be a mapping with string keys, got str 'abc'"),
    ("request int key", lambda led, w: claim(led, w, request={1: "x"}),
     "request must be a mapping with string keys"),
    ("writes 5", lambda led, w: led.write_allocations(5), "writes: Input should be a valid list"),
    ("writes [None]", lambda led, w: led.write_allocations([None]), "writes.0: Input should be"),
    ("writes ['ab']", lambda led, w: led.write_allocations(["ab"]), "writes.0: Input should be"),
    ("writes 'ab'", lambda led, w: led.write_allocations("ab"), "expected a list, got str 'ab'"),
    ("set_inventory list class",
     lambda led, w: led.set_inventory(w.host, ["VCPU"], {"total": 1}, 1),
     "resource_class: Input should be a valid string (got list)"),
    ("set_inventory dict class", lambda led, w: led.set_inventory(w.host, {"VCPU": 1}, {"total": 1},
                                                              1), "resource_class:"),
    ("delete_inventory list class", lambda led, w: led.delete_inventory(w.host, ["VCPU"], 1),
     "resource_class:"),
    ("set_devices None", lambda led, w: led.set_devices(w.gpu, "VGPU", None, 2),
     "device_ids: Input should be a valid list (got None)"),
    ("set_devices str", lambda led, w: led.set_devices(w.gpu, "VGPU", "abc", 2),
     "device_ids: expected a list, got str 'abc'"),
    ("set_devices too many", lambda led, w: led.set_devices(
        w.gpu, "VGPU", [f"d{i}" for i in range(MAX_DEVICE_IDS + 1)], 2),
     f"at most {MAX_DEVICE_IDS} items"),
    ("set_devices doubled", lambda led, w: led.set_devices(
        w.gpu, "VGPU", [f"d{i}" for i in range(12)] * 2, 2),
     "named twice for VGPU on provider"),
    ("set_devices doubled, shown", lambda led, w: led.set_devices(
        w.gpu, "VGPU", [f"d{i}" for i in range(12)] * 2, 2), "d7 and 2 more"),
    ("evacuate to {}", lambda led, w: led.evacuate(w.vm, new_id(), 1, destination={}),
     "destination: Value should have at least 1 item"),
    ("age as str", lambda led, w: led.migrations_in_flight(older_than_seconds="1"),
     "older_than_seconds: Input should be a valid number (got '1')"),
    ("age nan", lambda led, w: led.migrations_in_flight(older_than_seconds=float("nan")),
     "finite number"),
    ("class with newline", lambda led, w: led.register_provider(
        new_id(), "x", inventories={"CUSTOM_X\n": {"total": 1}}),
     "unknown resource class 'CUSTOM_X\\n'"),
    ("claim class with newline", lambda led, w: led.claim(
        new_id(), {w.host: {"CUSTOM_X\n": 1}}, None, project_id=PROJECT, user_id=USER),
     "unknown resource class 'CUSTOM_X\\n'"),
    ("consumer type with newline", lambda led, w: claim(led, w, consumer_type="INSTANCE\n"),
     "consumer_type: control character U+000A"),
    ("infinite ratio", lambda led, w: led.register_provider(
        new_id(), "x", inventories={"VCPU": {"total": 1, "allocation_ratio": float("inf")}}),
     "allocation_ratio: Input should be a finite number"),
    ("generation past 64 bits", lambda led, w: led.release(w.vm, 2**70),
     "expected_generation: Input should be less than or equal to 9223372036854775807"),
    ("query id", lambda led, w: led.provider("a\x00b"), "malformed UUID"),
]


@pytest.mark.parametrize(("case", "says"), [(c, s) for _, c, s in CASES],
                         ids=[name for name, _, _ in CASES])
def test_the_issue_13_inputs_are_refused_clearly(ledger: Ledger, case: Case, says: str) -> None:
    world = World.build(ledger)
    head = ledger.store.recorder.max_notification_id()
    with pytest.raises(InvalidRequest) as refused:
        case(ledger, world)
    assert says in str(refused.value)
    assert "\n" not in str(refused.value)
    assert ledger.store.recorder.max_notification_id() == head


def test_a_reason_may_span_lines_and_any_script_is_stored(ledger: Ledger) -> None:
    host = a_host(ledger, name="хост-1 🖥️ \"quoted\" \\ back")
    view = ledger.claim(new_id(), {host: {"VCPU": 1}}, None, project_id="проект ☃",
                        user_id="ユーザー", request={"reason": "line one\nline two\ttab"})
    assert view.generation == 1
    assert ledger.provider(host).name == "хост-1 🖥️ \"quoted\" \\ back"
