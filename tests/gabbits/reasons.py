"""A first reason for a gabbit test that fails, guessed from its request and failure.

``record`` gives every newly failing test the reason ``guess`` finds; a reason already in
``expectations.toml`` for a test that still fails is kept (it may have been refined by
hand). The categories:

- ``not built: …`` an endpoint or query parameter the server does not have;
- ``difference: …`` a known, documented difference from Placement's behaviour;
- ``defect: …`` a behaviour to be fixed (the issue number where one is filed);
- ``cascade: …`` fails, as far as the rules can tell, because an earlier write of the
  same file failed (the tests of a file build on each other); fixed with that one;
- ``harness: …`` fails against Placement 16 itself too, through this harness;
- ``unclassified: …`` none of the rules matched: look at it and name it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tests.gabbits.harness import Outcome

STATUS = re.compile(r"AssertionError: '(\d{3})' not found in \['(\d{3})'\]")
EXPECTED_TEXT = re.compile(r"AssertionError: '(.+?)' not found in ")
NOT_BUILT = (("/reshaper", "reshaper"), ("/allocation_candidates", "allocation candidates"),
             ("/aggregates", "aggregates"), ("/traits", "traits"))
UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")
FILTER = re.compile(r"does not filter providers by (\w+)")

GENERATION_AT_CREATION = "defect: a new provider's generation is 1, Placement's 0 (issue 27 #5)"
NO_POLICY = ("defect: a policy answer differs from Placement's defaults "
             "(http/policy_rules.py, http/policy.py)")


@dataclass(frozen=True)
class Failure:
    """A failed test as the rules see it: its file, request (as written and as sent),
    failure text (UUIDs replaced by ``{uuid}``), the status it got and wanted, and whether
    a write (POST, PUT, PATCH, DELETE) before it in the file failed: a failed read changes
    nothing later tests see."""

    file: str
    url: str
    path: str
    detail: str
    got: str
    want: str
    earlier_failed: bool


def not_built(f: Failure) -> str | None:
    return next((f"not built: {what}" for part, what in NOT_BUILT
                 if part in f.url or part in f.path), None)


def provider_filter(f: Failure) -> str | None:
    found = FILTER.search(f.detail)
    return f"not built: provider-list filter {found.group(1)}=" if found else None


def error_text(f: Failure) -> str | None:
    found = None if f.want else EXPECTED_TEXT.search(f.detail)
    if found is None:
        return None
    return f"difference: error text (Placement's reads {found.group(1)[:80]!r}) (issue 27 #3)"


def when(test: Callable[[Failure], bool], reason: str) -> Callable[[Failure], str | None]:
    return lambda f: reason if test(f) else None


# Tests that fail against Placement 16 itself through this harness (`counts --store
# placement`): gabbi 4's HTTP client over a real socket sends a body without a
# content-type as text/plain and refuses to send a malformed Content-Length, where
# Placement's own run hands the request to the WSGI app directly.
HARNESS = {
    ("basic-http.yaml", "post resource provider missing content-type"),
    ("basic-http.yaml", "PUT resource provider no body"),
    ("basic-http.yaml", "bad content length not int"),
}
HARNESS_REASON = ("harness: fails against Placement 16 itself too (gabbi's client over a "
                  "socket cannot send this request as written)")


# In order: the first rule that gives a reason wins.
RULES: list[Callable[[Failure], str | None]] = [
    not_built,
    provider_filter,
    when(lambda f: f.want == "403", NO_POLICY),
    when(lambda f: f.want == "401", "defect: authentication differs from Placement's "
         "noauth2 (http/keystone.py)"),
    when(lambda f: "generation" in f.detail and (
        f.got == "409" or "Unable to match" in f.detail), GENERATION_AT_CREATION),
    when(lambda f: "cache-control" in f.detail or "last-modified" in f.detail,
         "difference: no cache-control/last-modified headers (1.15) (issue 27 #8)"),
    when(lambda f: f.file == "cors.yaml", "difference: no CORS middleware (issue 27 #8)"),
    when(lambda f: "'GET' != '" in f.detail and "HEAD" in f.detail,
         "difference: the Allow header of a 405 lists HEAD too (issue 27 #8)"),
    when(lambda f: "'text/html' not found" in f.detail,
         "difference: errors are always JSON; Placement answers text/html to a client "
         "that does not accept JSON"),
    when(lambda f: "'unknown' != 'INSTANCE'" in f.detail,
         "defect: consumer type before 1.38 reads INSTANCE, Placement's unknown "
         "(issue 27 #8)"),
    when(lambda f: f.want in ("406", "415"),
         "difference: no content negotiation (406/415) (issue 27 #8)"),
    when(lambda f: "/resource_classes" in f.url,
         "defect: resource class create/delete codes (issue 27 #7)"),
    when(lambda f: "deleted provider's UUID is not reused" in f.detail,
         "defect: a deleted provider's UUID cannot be created again (issue 27 #4)"),
    when(lambda f: f.want == "409" and f.got in ("200", "201") and "name" in f.detail,
         "defect: provider names are not unique (issue 27 #6)"),
    when(lambda f: f.want == "400" and "already exists" in f.detail,
         "difference: an existing inventory is refused (409) before the body is "
         "validated (400)"),
    when(lambda f: f.want == "400" and f.got == "200",
         "difference: no length or format check where Placement has one (issue 27 #8)"),
    when(lambda f: "'http://127.0.0.1:" in f.detail,
         "difference: the Location header is absolute, Placement's relative (issue 27 #8)"),
    when(lambda f: (f.got, f.want) == ("400", "404"),
         "difference: a malformed UUID in the path is 400, Placement's 404 (issue 27 #8)"),
    when(lambda f: "data unavailable" in f.detail,
         "cascade: reads an earlier test's answer, which failed"),
    error_text,
    when(lambda f: f.earlier_failed, "cascade: follows an earlier failed write in this file"),
]


def guess(file: str, outcome: Outcome, earlier_failed: bool) -> str:
    """The reason category for a failed test of gabbit ``file`` (``earlier_failed``: a
    write before it in the same file failed)."""
    detail = UUID.sub("{uuid}", outcome.detail)
    status = STATUS.search(detail)
    got, want = status.groups() if status else ("", "")
    if (file, outcome.name) in HARNESS:
        return HARNESS_REASON
    failure = Failure(file, outcome.url, outcome.path, detail, got, want, earlier_failed)
    for rule in RULES:
        if (reason := rule(failure)) is not None:
            return reason
    return f"unclassified: {detail.splitlines()[0][:120] if detail else outcome.outcome}"


def fixture_reason(outcome: Outcome) -> str:
    """The reason a whole file cannot run, from its fixture's error."""
    found = re.search(r"data fixture needs (\S+ \S+), which answered (\d+)", outcome.detail)
    if found is None:
        return f"cannot run: {outcome.detail.splitlines()[0][:160]}"
    return f"not built: {found.group(1)} ({found.group(2)}), which a data fixture needs"
