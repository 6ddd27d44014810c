"""A first reason for a gabbit test that fails, guessed from its request and failure.

``record`` gives every newly failing test the reason ``guess`` finds; a reason already in
``expectations.toml`` for a test that still fails is kept (it may have been refined by
hand). The categories:

- ``not built: …`` an endpoint or query parameter the server does not have;
- ``difference: …`` a known, documented difference from Placement's behaviour;
- ``defect: …`` a behaviour to be fixed (the issue number where one is filed);
- ``cascade: …`` fails because an earlier test of the same file failed (the tests of a
  file build on each other); fixed with that one;
- ``unclassified: …`` none of the rules matched: look at it and name it.
"""

from __future__ import annotations

import re

from tests.gabbits.harness import Outcome

STATUS = re.compile(r"AssertionError: '(\d{3})' not found in \['(\d{3})'\]")
EXPECTED_TEXT = re.compile(r"AssertionError: '(.+?)' not found in ")
NOT_BUILT = (("/reshaper", "reshaper"), ("/allocation_candidates", "allocation candidates"),
             ("/aggregates", "aggregates"), ("/traits", "traits"))
FILTER = re.compile(r"does not filter providers by (\w+)")

GENERATION_AT_CREATION = "defect: a new provider's generation is 1, Placement's 0 (issue 27 #5)"
NO_POLICY = ("difference: no policy roles; without a token file every loopback caller is the "
             "anonymous admin (issue 27: Keystone and policy)")


def guess(outcome: Outcome, earlier_failed: bool) -> str:
    """The reason category for a failed test (``earlier_failed``: a test before it in the
    same file failed)."""
    detail, url = outcome.detail, outcome.url
    status = STATUS.search(detail)
    got, want = status.groups() if status else ("", "")
    for part, what in NOT_BUILT:
        if part in url:
            return f"not built: {what}"
    if (found := FILTER.search(detail)) is not None:
        return f"not built: provider-list filter {found.group(1)}="
    if want == "403":
        return NO_POLICY
    if want == "401":
        return ("difference: no noauth2 token check; without a token file a loopback "
                "caller needs no token")
    if "generation" in detail and (got == "409" or "Unable to match" in detail):
        return GENERATION_AT_CREATION
    if "cache-control" in detail or "last-modified" in detail:
        return "difference: no cache-control/last-modified headers (1.15) (issue 27 #8)"
    if want in ("406", "415"):
        return f"difference: no content negotiation ({want}) (issue 27 #8)"
    if "/resource_classes" in url:
        return "defect: resource class create/delete codes (issue 27 #7)"
    if "data unavailable" in detail:
        return "cascade: reads an earlier test's answer, which failed"
    if status is None and (text := EXPECTED_TEXT.search(detail)) is not None:
        return f"difference: error text (Placement's reads {text.group(1)[:80]!r}) " \
               "(issue 27 #3)"
    if earlier_failed:
        return "cascade: follows an earlier failure in this file"
    if want == "404" and got == "400":
        return "difference: a malformed UUID in the path is 400, Placement's 404 (issue 27 #8)"
    return f"unclassified: {detail.splitlines()[0][:120] if detail else outcome.outcome}"


def fixture_reason(outcome: Outcome) -> str:
    """The reason a whole file cannot run, from its fixture's error."""
    found = re.search(r"data fixture needs (\S+ \S+), which answered (\d+)", outcome.detail)
    if found is None:
        return f"cannot run: {outcome.detail.splitlines()[0][:160]}"
    return f"not built: {found.group(1)} ({found.group(2)}), which a data fixture needs"
