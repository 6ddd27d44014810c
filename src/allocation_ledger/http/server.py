"""Running the application under uvicorn: ``allocation-ledger serve``."""

from __future__ import annotations

import ipaddress
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.http.auth import Tokens

MAX_BODY = 1024 * 1024  # as http.limits.MAX_BODY (not imported: uvicorn loads lazily)


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
          log_level: str = "warning", max_body: int = MAX_BODY) -> None:
    """Serve the ledger at ``url`` on ``bind`` until interrupted. Without a token file only a
    loopback address is allowed (every caller is then the anonymous admin). Request bodies
    of more than ``max_body`` bytes are refused (413), request heads of more than
    :data:`~allocation_ledger.http.limits.MAX_HEAD` bytes answered 414 or 431."""
    import uvicorn

    from allocation_ledger.bootstrap import open_ledger
    from allocation_ledger.http.app import create_app
    from allocation_ledger.http.limits import MAX_HEAD, LimitedH11Protocol

    host, port = parse_bind(bind)
    tokens = Tokens.load(token_file)
    if tokens.callers is None and not is_loopback(host):
        raise InvalidRequest(f"serving on {host} needs --token-file: without tokens only a "
                             "loopback address is allowed")
    with open_ledger(url, read_side=True) as ledger:
        uvicorn.run(create_app(ledger, tokens, max_body), host=host, port=port,
                    log_level=log_level, access_log=False, http=LimitedH11Protocol,
                    h11_max_incomplete_event_size=MAX_HEAD)


def free_port() -> int:
    """A port of 127.0.0.1 nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def spawned(url: str, token_file: str | None = None, timeout: float = 60.0,
            max_body: int | None = None) -> Iterator[int]:
    """``allocation-ledger serve`` over ``url`` as a child process on a free port of
    127.0.0.1; yields the port once it accepts connections, stops it afterwards."""
    port = free_port()
    argv = [sys.executable, "-c", "from allocation_ledger.cli import main; "
            "raise SystemExit(main())", "serve", "--url", url, "--bind", f"127.0.0.1:{port}"]
    if token_file is not None:
        argv += ["--token-file", token_file]
    if max_body is not None:
        argv += ["--max-body-bytes", str(max_body)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _wait_until_up(proc, port, timeout)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait()


def _wait_until_up(proc: subprocess.Popen[bytes], port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode() if proc.stdout else ""
            raise RuntimeError(f"server exited with {proc.returncode}: {out}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server on port {port} did not come up in {timeout} s")
