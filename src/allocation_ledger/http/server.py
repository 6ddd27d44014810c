"""Running the application under uvicorn: ``allocation-ledger serve``."""

from __future__ import annotations

import ipaddress

from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.http.auth import Tokens


def parse_bind(bind: str) -> tuple[str, int]:
    """``"127.0.0.1:8778"`` -> ``("127.0.0.1", 8778)``."""
    host, sep, port = bind.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidRequest(f"--bind wants HOST:PORT, got {bind!r}")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(url: str | None, bind: str, token_file: str | None = None,
          log_level: str = "warning") -> None:
    """Serve the ledger at ``url`` on ``bind`` until interrupted. Without a token file only a
    loopback address is allowed (every caller is then the anonymous admin)."""
    import uvicorn

    from allocation_ledger.bootstrap import open_ledger
    from allocation_ledger.http.app import create_app

    host, port = parse_bind(bind)
    tokens = Tokens.load(token_file)
    if tokens.callers is None and not is_loopback(host):
        raise InvalidRequest(f"serving on {host} needs --token-file: without tokens only a "
                             "loopback address is allowed")
    with open_ledger(url, read_side=True) as ledger:
        uvicorn.run(create_app(ledger, tokens), host=host, port=port, log_level=log_level,
                    access_log=False)
