"""Placement's microversions: the ``OpenStack-API-Version: placement X.Y`` header.

No header means the minimum (1.0), ``latest`` means the maximum; a malformed value is a 400
and a version outside ``MIN``..``MAX`` a 406, as Placement answers. Every response names the
version it was served at and varies on the header.
"""

from __future__ import annotations

import re

from allocation_ledger.http.errors import HTTPError

SERVICE = "placement"
HEADER = "openstack-api-version"
MIN = (1, 0)
MAX = (1, 39)

_VERSION = re.compile(r"^(\d+)\.(\d+)$")

Version = tuple[int, int]


def text(version: Version) -> str:
    """``(1, 28)`` -> ``"1.28"``."""
    return f"{version[0]}.{version[1]}"


def requested(header: str | None) -> Version:
    """The version a request asks for, from its ``OpenStack-API-Version`` header value."""
    wanted = _placement_part(header)
    if wanted is None:
        return MIN
    if wanted == "latest":
        return MAX
    match = _VERSION.match(wanted)
    if match is None:
        raise HTTPError(400, f"invalid version string: {wanted}")
    version = (int(match.group(1)), int(match.group(2)))
    if not MIN <= version <= MAX:
        raise HTTPError(406, f"Unacceptable version header: {wanted}")
    return version


def _placement_part(header: str | None) -> str | None:
    """The value for the ``placement`` service in a header that may name several."""
    if not header:
        return None
    for part in header.split(","):
        words = part.strip().split(None, 1)
        if len(words) == 2 and words[0].lower() == SERVICE:
            return words[1].strip().lower()
    return None
