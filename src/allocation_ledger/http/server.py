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
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, ClassVar

from allocation_ledger.domain.errors import InvalidRequest, LedgerError
from allocation_ledger.http.auth import Guard, Tokens

if TYPE_CHECKING:
    from allocation_ledger.http.policy import Policy

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
          auth: AuthSettings | None = None, group_commit: bool = True,
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
    false. ``auth`` chooses Keystone's way instead of the token file (see
    :class:`AuthSettings`). With ``group_commit`` the commands its threads send together
    share appends (``application/grouping.py``). With ``cors_origins``, cross-origin
    requests from them are allowed, with the request headers ``cors_allow_headers``
    (Placement's ``[cors]`` options, ``http/cors.py``)."""
    import uvicorn

    from allocation_ledger.bootstrap import open_ledger
    from allocation_ledger.http import logs
    from allocation_ledger.http.app import create_app
    from allocation_ledger.http.cors import settings_of
    from allocation_ledger.http.limits import MAX_HEAD, LimitedH11Protocol
    from allocation_ledger.metrics import instrument

    host, port = parse_bind(bind)
    auth = auth or AuthSettings()
    guard, policy = auth.build(token_file, host)
    log_config = logs.config(log_level, log_format, access_log=access_log)
    check_can_listen(host, port)
    with open_ledger(url, read_side=True, group_commit=group_commit) as ledger:
        read_side = getattr(ledger.read_side, "models", None)
        metrics = instrument(ledger.store, stale_after=stale_after,
                             positions=read_side.positions if read_side else None)
        app = create_app(ledger, guard, max_body, metrics, policy,
                         cors=settings_of(cors_origins, cors_allow_headers))
        uvicorn.run(app, host=host, port=port,
                    log_level=log_level, log_config=log_config, access_log=False,
                    http=LimitedH11Protocol, h11_max_incomplete_event_size=MAX_HEAD)


@dataclass(frozen=True)
class AuthSettings:
    """How ``serve`` authenticates and authorizes: ``local`` (the token file, or without
    one the anonymous admin on loopback), ``noauth2`` (Placement's test authentication,
    loopback only) or ``keystone`` (``keystonemiddleware.auth_token`` configured by
    ``config``); the last two check Placement's policy with the ``policy_defaults``
    (``secure`` or ``legacy``) and the operator's ``policy_file``."""

    mode: str = "local"
    config: str | None = None
    policy_file: str | None = None
    policy_defaults: str = "secure"

    def build(self, token_file: str | None, host: str) -> tuple[Guard, Policy | None]:
        """The guard and the policy (``None``: no policy) these settings make."""
        if self.mode == "local":
            tokens = Tokens.load(token_file)
            if tokens.callers is None and not is_loopback(host):
                raise InvalidRequest(f"serving on {host} needs --token-file: without tokens "
                                     "only a loopback address is allowed")
            return tokens, None
        if token_file is not None:
            raise InvalidRequest(f"--token-file is for --auth local, not {self.mode}")
        from allocation_ledger.http.keystone import KeystoneAuth, Noauth2
        from allocation_ledger.http.policy import Policy

        policy = Policy(self.policy_defaults, self.policy_file)
        if self.mode == "noauth2":
            if not is_loopback(host):
                raise InvalidRequest(f"--auth noauth2 trusts the caller's headers: only a "
                                     f"loopback address is allowed, not {host}")
            return Noauth2(), policy
        if self.mode == "keystone":
            if self.config is None:
                raise InvalidRequest("--auth keystone needs --auth-config FILE")
            return KeystoneAuth.from_file(self.config), policy
        raise InvalidRequest(f"--auth must be local, noauth2 or keystone, not {self.mode!r}")


class CannotListen(LedgerError):
    """Raised when ``serve`` cannot listen on its address (a port in use, an address not of
    this host, a port below 1024 without the right): one line, exit 1."""

    FIELDS: ClassVar[tuple[str, ...]] = ("bind", "reason")
    bind: str
    reason: str

    def __init__(self, bind: str, reason: str) -> None:
        self.bind, self.reason = bind, reason
        super().__init__(f"cannot listen on {bind}: {reason}")


def check_can_listen(host: str, port: int) -> None:
    """Bind ``host:port`` once and let go (as uvicorn binds it: ``SO_REUSEADDR``), so a port
    in use is one line before the store is opened rather than uvicorn's lines and exit 3."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as err:
        raise CannotListen(f"{host}:{port}", str(err)) from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as err:
            raise CannotListen(f"{host}:{port}", err.strerror or str(err)) from None


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
