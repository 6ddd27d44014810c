"""A ledger corrupted behind the service's back: the audit finds each problem, at the
position where it was written, and keeps going."""

from __future__ import annotations

from allocation_ledger import Ledger
from allocation_ledger.audit import audit
from allocation_ledger.audit import findings as f
from allocation_ledger.audit.findings import Finding
from allocation_ledger.audit.history import ledger_records, provider_history
from allocation_ledger.domain.ids import consumer_stream_id
from tests.audit import tampering
from tests.builders import PROJECT, USER, a_host, an_instance, new_id


def found(ledger: Ledger) -> list[tuple[str, int]]:
    """(kind, position) of every error the audit reports."""
    return [(x.kind, x.position) for x in audit(ledger.store).errors]


def only(ledger: Ledger, kind: str) -> Finding:
    """The one error of ``kind``."""
    matching = [x for x in audit(ledger.store).errors if x.kind == kind]
    assert len(matching) == 1, matching
    return matching[0]


def test_an_allocation_over_capacity_is_reported_where_it_was_written(ledger: Ledger) -> None:
    host = a_host(ledger, vcpu=16, memory_mb=None)
    vm = an_instance(ledger, {host: {"VCPU": 10}}).consumer_uuid
    assert found(ledger) == []

    # One write, in the service's order: the provider's event, then the consumer's.
    same = tampering.edit()
    written = tampering.save(
        ledger, tampering.usage(ledger, host, {"VCPU": 20}, consumers=[vm], request=same),
        tampering.holding(ledger, vm, {host: {"VCPU": 20}}, request=same))

    finding = only(ledger, f.OVER_CAPACITY)
    assert finding.position == written[0]  # the provider's event grew the usage
    assert finding.numbers == {"before": 10, "usage": 20, "capacity": 16}
    assert finding.ids == {"provider_uuid": host, "resource_class": "VCPU"}
    assert found(ledger) == [(f.OVER_CAPACITY, written[0])]  # consistent otherwise


def test_a_device_with_two_holders_is_reported(ledger: Ledger) -> None:
    host = a_host(ledger, memory_mb=None)
    gpu = new_id()
    generation = ledger.register_provider(gpu, "gpu", parent_uuid=host).generation
    ledger.set_devices(gpu, "VGPU", ["gpu-0", "gpu-1"], generation)
    first = an_instance(ledger, {gpu: {"VGPU": 1}})
    second = an_instance(ledger, {gpu: {"VGPU": 1}})
    assert (first.devices, second.devices) == ({gpu: {"VGPU": ["gpu-0"]}},
                                               {gpu: {"VGPU": ["gpu-1"]}})
    assert found(ledger) == []

    [position] = tampering.save(ledger, tampering.holding(
        ledger, second.consumer_uuid, {gpu: {"VGPU": 1}}, {gpu: {"VGPU": ["gpu-0"]}}))

    finding = only(ledger, f.DOUBLE_HOLDER)
    assert finding.position == position
    assert finding.ids["device"] == "gpu-0"
    assert finding.ids["consumers"] == sorted([first.consumer_uuid, second.consumer_uuid])
    # gpu-1 is still held by the second instance according to the provider, not the consumer
    assert (f.HOLDER_MISMATCH, position) in found(ledger)


def test_a_migration_holding_resources_after_it_resolved_is_reported(ledger: Ledger) -> None:
    src, dst = a_host(ledger, memory_mb=None), a_host(ledger, memory_mb=None)
    vm = an_instance(ledger, {src: {"VCPU": 2}})
    migration = new_id()
    ledger.swap(vm.consumer_uuid, migration, vm.generation or 0)
    ledger.claim(vm.consumer_uuid, {dst: {"VCPU": 2}}, None, project_id=PROJECT, user_id=USER)
    ledger.confirm(migration, ledger.migration(migration).generation or 0)
    assert found(ledger) == []

    same = tampering.edit()
    written = tampering.save(
        ledger, tampering.usage(ledger, src, {"VCPU": 2}, consumers=[migration], request=same),
        tampering.holding(ledger, migration, {src: {"VCPU": 2}}, request=same))

    finding = only(ledger, f.RESOLVED_HOLDS)
    assert (finding.position, finding.stream) == (written[1],
                                                  str(consumer_stream_id(migration)))
    assert finding.numbers == {"amount": 2}
    assert found(ledger) == [(f.RESOLVED_HOLDS, written[1])]


def test_usage_that_does_not_match_allocations_is_reported(ledger: Ledger) -> None:
    host = a_host(ledger, vcpu=16, memory_mb=None)
    an_instance(ledger, {host: {"VCPU": 4}})
    [position] = tampering.save(ledger, tampering.usage(ledger, host, {"VCPU": 7}))

    finding = only(ledger, f.USAGE_MISMATCH)
    assert finding.position == position
    assert finding.numbers == {"usage": 7, "allocated": 4, "difference": 3}

    # Later honest commands build on the bad number: reported once, not at every command...
    an_instance(ledger, {host: {"VCPU": 2}})
    assert found(ledger) == [(f.USAGE_MISMATCH, position)]
    # ...until the difference changes, which is a new problem.
    [again] = tampering.save(ledger, tampering.usage(ledger, host, {"VCPU": 8}))
    assert found(ledger) == [(f.USAGE_MISMATCH, position), (f.USAGE_MISMATCH, again)]


def test_a_broken_stream_and_an_unreadable_record_are_reported_and_replay_goes_on(
    ledger: Ledger,
) -> None:
    host = a_host(ledger, vcpu=16, memory_mb=None)
    vm = an_instance(ledger, {host: {"VCPU": 4}})
    [over] = tampering.save(ledger, tampering.usage(ledger, host, {"VCPU": 40},
                                                    consumers=[vm.consumer_uuid]))
    gap = tampering.copy_with_version(ledger, over, 7)  # the provider jumps from 3 to 7
    junk = tampering.raw(ledger, consumer_stream_id(new_id()), 1,
                         "allocation_ledger.domain.nowhere:Nothing", b"{}")

    # The copy carries the tampered event's command id, so the audit reads both as one
    # command and checks the usage where that command ends: at the copy.
    assert found(ledger) == [(f.OVER_CAPACITY, over), (f.ORDER, gap),
                             (f.USAGE_MISMATCH, gap), (f.UNREADABLE, junk)]


def test_everything_wrong_is_collected_in_ledger_order(ledger: Ledger) -> None:
    host = a_host(ledger, vcpu=8, memory_mb=None)
    vm = an_instance(ledger, {host: {"VCPU": 2}}).consumer_uuid
    one = tampering.save(ledger, tampering.usage(ledger, host, {"VCPU": 3}))
    two = tampering.save(ledger, tampering.holding(ledger, vm, {host: {"VCPU": 9}}))
    an_instance(ledger, {a_host(ledger): {"VCPU": 1}})  # an honest command in between
    three = tampering.save(ledger, tampering.usage(ledger, host, {"VCPU": 12},
                                                   consumers=[vm]))

    assert found(ledger) == [
        (f.USAGE_MISMATCH, one[0]), (f.USAGE_MISMATCH, two[0]),
        (f.OVER_CAPACITY, three[0]), (f.USAGE_MISMATCH, three[0])]
    report = audit(ledger.store)
    assert not report.ok
    assert report.events == ledger.store.recorder.max_notification_id()


def test_edits_that_look_like_one_command_are_checked_at_its_end(ledger: Ledger) -> None:
    """Without a request id to tell them apart, a provider event followed by a consumer
    event reads as one command (that is the service's order): the ledger is checked after
    both, and the problem is placed at the last event that touched it."""
    host = a_host(ledger, vcpu=8, memory_mb=None)
    vm = an_instance(ledger, {host: {"VCPU": 2}}).consumer_uuid
    same = {"actor": "intruder"}
    written = tampering.save(ledger, tampering.usage(ledger, host, {"VCPU": 3}, request=same))
    written += tampering.save(ledger, tampering.holding(ledger, vm, {host: {"VCPU": 9}},
                                                       request=same))

    assert found(ledger) == [(f.USAGE_MISMATCH, written[1])]
    assert only(ledger, f.USAGE_MISMATCH).numbers == {
        "usage": 3, "allocated": 9, "difference": -6}


def test_history_still_reads_a_broken_stream_and_shows_unreadable_records(
    ledger: Ledger,
) -> None:
    host = a_host(ledger, vcpu=16, memory_mb=None)
    an_instance(ledger, {host: {"VCPU": 4}})
    [over] = tampering.save(ledger, tampering.usage(ledger, host, {"VCPU": 40}))
    gap = tampering.copy_with_version(ledger, over, 7)
    tampering.raw(ledger, consumer_stream_id(new_id()), 1, "nowhere:Nothing", b"{}")

    story = provider_history(ledger.store, host)
    assert [(e.version, e.actor) for e in story] == [
        (1, None), (2, None), (3, None), (4, "intruder"), (7, "intruder")]
    assert story[3].changes["usages"] == {"VCPU": [4, 40]}
    gap_record, junk_record = ledger_records(ledger.store, gap)
    assert (gap_record["version"], gap_record["provider_uuid"]) == (7, host)
    assert junk_record["error"].startswith("TopicError")
