"""Running the application under uvicorn: ``allocation-ledger serve``."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import IO

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
          log_level: str = "info", max_body: int = MAX_BODY, log_format: str = "text",
          access_log: bool = True, stale_after: float = 3600.0,
          cors_origins: Sequence[str] = (), cors_allow_headers: Sequence[str] = ()) -> None:
    """Serve the ledger at ``url`` on ``bind`` until interrupted. Without a token file only a
    loopback address is allowed (every caller is then the anonymous admin). Request bodies
    of more than ``max_body`` bytes are refused (413), request heads of more than
    :data:`~allocation_ledger.http.limits.MAX_HEAD` bytes answered 414 or 431.

    The process counts its commands and requests and serves them, with the store's gauges
    (head, projection lag, migrations in flight and those in flight ``stale_after``
    seconds or more), at ``GET /metrics``; it logs
    on stderr at ``log_level`` in ``log_format`` (``text`` or ``json``, see
    ``http/logs.py``), one access line per request at INFO unless ``access_log`` is
    false. With ``cors_origins``, cross-origin requests from them are allowed, with the
    request headers ``cors_allow_headers`` (Placement's ``[cors]`` options, ``http/cors.py``).
    """
    import uvicorn

    from allocation_ledger.bootstrap import open_ledger
    from allocation_ledger.http import logs
    from allocation_ledger.http.app import create_app
    from allocation_ledger.http.cors import settings_of
    from allocation_ledger.http.limits import MAX_HEAD, LimitedH11Protocol
    from allocation_ledger.metrics import instrument

    host, port = parse_bind(bind)
    tokens = Tokens.load(token_file)
    if tokens.callers is None and not is_loopback(host):
        raise InvalidRequest(f"serving on {host} needs --token-file: without tokens only a "
                             "loopback address is allowed")
    log_config = logs.config(log_level, log_format, access_log=access_log)
    with open_ledger(url, read_side=True) as ledger:
        read_side = getattr(ledger.read_side, "models", None)
        metrics = instrument(ledger.store, stale_after=stale_after,
                             positions=read_side.positions if read_side else None)
        app = create_app(ledger, tokens, max_body, metrics,
                         cors=settings_of(cors_origins, cors_allow_headers))
        uvicorn.run(app, host=host, port=port,
                    log_level=log_level, log_config=log_config, access_log=False,
                    http=LimitedH11Protocol, h11_max_incomplete_event_size=MAX_HEAD)


def free_port() -> int:
    """A port of 127.0.0.1 nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def spawned(url: str, token_file: str | None = None, timeout: float = 60.0,
            max_body: int | None = None, args: Sequence[str] = (),
            output: str | os.PathLike[str] | None = None) -> Iterator[int]:
    """``allocation-ledger serve`` over ``url`` (and ``args``) as a child process on a free
    port of 127.0.0.1; yields the port once it accepts connections, stops it afterwards.

    Its stdout and stderr go to the file ``output`` (a temporary file, removed afterwards,
    when not given): never to a pipe, which a server that logs every request would fill
    and then block on when nobody reads it."""
    port = free_port()
    argv = [sys.executable, "-c", "from allocation_ledger.cli import main; "
            "raise SystemExit(main())", "serve", "--url", url, "--bind", f"127.0.0.1:{port}"]
    if token_file is not None:
        argv += ["--token-file", token_file]
    if max_body is not None:
        argv += ["--max-body-bytes", str(max_body)]
    argv += list(args)
    with ExitStack() as stack:
        if output is None:
            log = stack.enter_context(tempfile.TemporaryFile())
        else:
            log = stack.enter_context(open(output, "w+b"))
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_until_up(proc, port, timeout, log)
            yield port
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:  # pragma: no cover
                proc.kill()
                proc.wait()


def _wait_until_up(proc: subprocess.Popen[bytes], port: int, timeout: float,
                   log: IO[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"server exited with {proc.returncode}: "
                               f"{log.read().decode(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server on port {port} did not come up in {timeout} s")
