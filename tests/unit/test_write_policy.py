"""The write policy on its own: which attempts trust the cache, how long a clash makes a
provider read fresh, the pauses between attempts, and how many clashes it remembers."""

from __future__ import annotations

import time

import pytest

from allocation_ledger.application.policy import WritePolicy
from allocation_ledger.domain.errors import InvalidRequest

HOST, OTHER = "host-a", "host-b"


def test_only_the_first_attempt_trusts_the_cache() -> None:
    policy = WritePolicy(max_attempts=4)
    assert list(policy.attempts()) == [1, 2, 3, 4]
    assert [policy.trusts_cache(n) for n in policy.attempts()] == [True, False, False, False]
    assert [policy.reads_cached(n, HOST) for n in policy.attempts()] == [
        True, False, False, False]


def test_without_cached_first_attempts_every_attempt_reads_fresh() -> None:
    policy = WritePolicy(cached_first_attempt=False)
    assert not any(policy.trusts_cache(n) for n in policy.attempts())
    assert not policy.reads_cached(1, HOST)


def test_a_clash_makes_that_provider_read_fresh_for_a_while() -> None:
    policy = WritePolicy(contended_for=0.2)
    policy.clashed([HOST])
    assert policy.contended(HOST) and not policy.contended(OTHER)
    assert not policy.reads_cached(1, HOST)
    assert policy.reads_cached(1, OTHER)
    time.sleep(0.25)
    assert not policy.contended(HOST)
    assert policy.reads_cached(1, HOST)


def test_it_remembers_only_the_latest_clashes() -> None:
    policy = WritePolicy(remembered=2)
    policy.clashed(["a", "b"])
    policy.clashed(["c"])  # "a" is the oldest: let go
    policy.clashed(["b"])  # seen again: now the newest
    policy.clashed(["d"])  # "c" is now the oldest
    assert [p for p in "abcd" if policy.contended(p)] == ["b", "d"]


@pytest.mark.parametrize("attempt", [2, 3, 6, 9])
def test_pauses_grow_with_the_attempt_and_stay_bounded(attempt: int) -> None:
    policy = WritePolicy(pause_unit=0.001, max_doublings=6)
    bound = 0.001 * 2 ** min(attempt, 6)
    pauses = [policy.pause(attempt) for _ in range(200)]
    assert all(0 <= p <= bound for p in pauses)
    assert max(pauses) > bound / 2  # uniform over the range, not stuck at zero


def test_no_pause_after_an_attempt_that_trusted_the_cache() -> None:
    assert {WritePolicy().pause(1) for _ in range(50)} == {0.0}
    fresh = WritePolicy(cached_first_attempt=False, pause_unit=0.001)
    assert max(fresh.pause(1) for _ in range(50)) > 0.0  # a first attempt that read fresh


def test_a_contended_provider_is_taken_in_turns_unless_a_turn_was_waited_for_in_vain(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr("allocation_ledger.application.policy.time.monotonic", lambda: now[0])
    policy = WritePolicy(contended_for=2.0)
    assert not policy.takes_turn("h")  # never clashed on
    policy.clashed(["h"])
    assert policy.takes_turn("h")
    assert not WritePolicy(takes_turns=False).takes_turn("h")
    policy.turn_not_had("h")
    assert not policy.takes_turn("h") and policy.contended("h")
    now[0] += 2.5
    policy.clashed(["h"])
    assert policy.takes_turn("h")


@pytest.mark.parametrize(("field", "value"), [
    ("max_attempts", 0), ("max_attempts", 2.5), ("max_attempts", True), ("remembered", 0),
    ("max_doublings", -1), ("pause_unit", -0.001), ("pause_unit", float("nan")),
    ("contended_for", float("inf")), ("contended_for", "2"), ("takes_turns", "yes"),
    ("cached_first_attempt", 1),
])
def test_a_policy_that_could_not_work_is_refused(field: str, value: object) -> None:
    with pytest.raises(InvalidRequest, match=f"invalid write policy: {field} must be"):
        WritePolicy(**{field: value})  # type: ignore[arg-type]
