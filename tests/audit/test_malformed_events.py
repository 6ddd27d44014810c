"""A well-formed record that is not an event of its class (a ``Consumer.Created`` of
``{}``, an allocation change without its fields), appended through the store's own append
as the application's role could: the audit and ``history ledger`` report it at its
position and go on; the read models stop before it and say where and why, in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.audit import audit
from allocation_ledger.audit import findings as f
from allocation_ledger.bootstrap import open_read_models
from allocation_ledger.cli import main
from allocation_ledger.domain.ids import consumer_stream_id, provider_stream_id
from tests.audit import tampering
from tests.builders import a_host, an_instance, new_id

CREATED = "allocation_ledger.domain.consumer:Consumer.Created"
CHANGED = "allocation_ledger.domain.provider:Provider.AllocationsChanged"


def without(ledger: Ledger, topic: str, field: str) -> bytes:
    """The stored state of the first event of ``topic`` with one field taken out."""
    found = ledger.store.recorder.select_notifications(1, 1000, topics=[topic])[0]
    state = json.loads(found.state)
    del state[field]
    return json.dumps(state).encode()


@pytest.fixture(params=["empty-creation", "creation-without-allocations",
                        "empty-usage-change"])
def malformed(request: pytest.FixtureRequest, durable_url: str
              ) -> Iterator[tuple[str, int, str]]:
    """A ledger with one malformed event between honest commands: (url, its position,
    the host)."""
    with open_ledger(durable_url) as ledger:
        host = a_host(ledger, vcpu=16, memory_mb=None)
        claimed = an_instance(ledger, {host: {"VCPU": 2}})
        if request.param == "empty-usage-change":
            version = tampering.provider(ledger, host).version + 1
            position = tampering.raw(ledger, provider_stream_id(host), version, CHANGED, b"{}")
        else:
            state = b"{}"
            if request.param == "creation-without-allocations":
                state = without(ledger, CREATED, "allocations")  # the claim's
                assert b'"consumer_uuid"' in state
            position = tampering.raw(ledger, consumer_stream_id(new_id()), 1, CREATED, state)
        # an honest command after it (on another host: this one's stream no longer loads)
        an_instance(ledger, {a_host(ledger, vcpu=4, memory_mb=None): {"VCPU": 2}})
        assert claimed.generation == 1
        yield durable_url, position, host


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one command."""
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_audit_reports_it_at_its_position_and_checks_the_rest(
        malformed: tuple[str, int, str], capsys: pytest.CaptureFixture[str]) -> None:
    url, position, _ = malformed
    with open_ledger(url) as ledger:
        report = audit(ledger.store)
        assert [(x.kind, x.position) for x in report.errors] == [(f.UNREADABLE, position)]
        assert report.events == ledger.store.recorder.max_notification_id()
    code, out, err = run(capsys, "audit", "--url", url, "--projections", "off")
    assert (code, err) == (1, "")
    assert f.UNREADABLE in out and f"#{position}" in out and "lacks" in out


def test_history_ledger_shows_it_as_a_record_it_cannot_read(
        malformed: tuple[str, int, str], capsys: pytest.CaptureFixture[str]) -> None:
    url, position, _ = malformed
    code, out, err = run(capsys, "history", "ledger", "--url", url, "--json")
    assert err == "" and code == 0
    records = json.loads(out)  # --json: one array
    bad = [r for r in records if r["position"] == position]
    assert len(bad) == 1 and "MalformedEvent" in bad[0]["error"]
    assert records[-1]["position"] > position  # and it read on


@pytest.mark.parametrize("command", [["rebuild"], ["resume"]])
def test_the_read_models_stop_before_it_and_say_where(
        command: list[str], malformed: tuple[str, int, str],
        capsys: pytest.CaptureFixture[str]) -> None:
    url, position, _ = malformed
    code, _, err = run(capsys, "projections", *command, "--url", url, "--quiet")
    assert code == 1
    assert err.splitlines() == [err.strip()]
    assert f"the event at #{position}" in err and "cannot be read" in err
    assert "unexpected" not in err
    with open_read_models(url) as read:  # nothing at or past the bad event was applied
        assert all(p < position for p in read.positions().values())


def test_follow_stops_at_it_in_one_line(malformed: tuple[str, int, str]) -> None:
    url, position, _ = malformed
    env = {k: v for k, v in os.environ.items() if k not in ("LEDGER_URL", "PROJECTIONS_URL")}
    entry = "from allocation_ledger.cli import main; raise SystemExit(main())"
    done = subprocess.run([sys.executable, "-c", entry, "projections", "follow", "--url", url,
                           "--poll-interval", "0.2"], check=False, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if f"#{position}" in line]
    assert len(lines) == 1 and "cannot be read" in lines[0]
    assert "unexpected" not in done.stderr
