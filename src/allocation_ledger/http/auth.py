"""Who is asking: tokens from a token file, each with a name (the events' actor) and a role.

The file holds one ``TOKEN NAME ROLE`` per line (``#`` starts a comment). ``admin`` may do
everything; ``reader`` may only read (GETs: Placement's reads, history, audit). Without a
token file every request is the anonymous admin, which the server allows only on a loopback
address. Clients send the token as ``X-Auth-Token``, as OpenStack clients do.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from starlette.requests import Request

from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.http.errors import HTTPError

ROLES = ("admin", "reader")
HEADER = "x-auth-token"


@dataclass(frozen=True)
class Caller:
    """An authenticated caller: its name (stored as the actor) and its role."""

    name: str
    role: str

    def may(self, method: str) -> bool:
        """True when the role allows this HTTP method."""
        return self.role == "admin" or method in ("GET", "HEAD")


ANONYMOUS = Caller("anonymous", "admin")


class Guard(Protocol):
    """How the server learns who is asking: a token file (:class:`Tokens`), or Keystone's
    way (``http/keystone.py``)."""

    async def identify(self, request: Request) -> Caller:
        """The request's caller; :class:`HTTPError` 401 (or 403) when it may not ask."""
        ...


@dataclass(frozen=True)
class Tokens:
    """The token file's contents: token -> caller (``None``: no authentication)."""

    callers: dict[str, Caller] | None

    @classmethod
    def load(cls, path: str | None) -> Tokens:
        """Read a token file (``None``: no authentication)."""
        if path is None:
            return cls(None)
        callers: dict[str, Caller] = {}
        for number, line in enumerate(Path(path).read_text().splitlines(), 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) != 3 or words[2] not in ROLES:
                raise InvalidRequest(
                    f"{path}:{number}: expected 'TOKEN NAME ROLE' with ROLE one of "
                    f"{', '.join(ROLES)}")
            callers[words[0]] = Caller(words[1], words[2])
        return cls(callers)

    async def identify(self, request: Request) -> Caller:
        """The caller of the request's ``X-Auth-Token`` (see :meth:`caller`)."""
        return self.caller(request.headers.get(HEADER), request.method)

    def caller(self, token: str | None, method: str) -> Caller:
        """The caller a request's token names; 401 without a known token, 403 when its role
        does not allow the method."""
        if self.callers is None:
            return ANONYMOUS
        # compared as bytes: compare_digest refuses str that is not ASCII, and a header
        # may carry any byte (Starlette gives them as latin-1 text)
        given = token.encode("utf-8") if token is not None else None
        found = next((c for t, c in self.callers.items()
                      if given is not None and hmac.compare_digest(t.encode("utf-8"), given)),
                     None)
        if found is None:
            raise HTTPError(401, "The request you have made requires authentication.",
                            headers={"www-authenticate": 'Keystone uri=""'})
        if not found.may(method):
            raise HTTPError(403, f"{found.name} ({found.role}) may not {method} here")
        return found
