"""Running the application under uvicorn: ``allocation-ledger serve``."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import asdict, dataclass
from typing import IO, TYPE_CHECKING, Any, ClassVar

from allocation_ledger.domain.errors import InvalidRequest, LedgerError
from allocation_ledger.http.auth import Guard, Tokens

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from allocation_ledger.application.ledger import Ledger
    from allocation_ledger.http.policy import Policy

MAX_BODY = 1024 * 1024  # as http.limits.MAX_BODY (not imported: uvicorn loads lazily)
#: How ``serve --workers N`` hands its settings to the worker processes it starts.
SETTINGS_VARIABLE = "ALLOCATION_LEDGER_SERVE_SETTINGS"
#: prometheus_client's multiprocess mode: where the workers keep their counters.
METRICS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


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
          cors_origins: Sequence[str] = (), cors_allow_headers: Sequence[str] = (),
          workers: int = 1, loop: str = "auto") -> None:
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
    (Placement's ``[cors]`` options, ``http/cors.py``).

    With ``workers`` above 1, that many worker processes serve the one address (see
    :func:`serve_workers`). ``loop``: uvicorn's event loop (:data:`LOOPS`)."""
    host, port = parse_bind(bind)
    check_loop(loop)
    settings = ServeSettings(url, host, token_file, max_body, stale_after,
                             auth or AuthSettings(), group_commit, tuple(cors_origins),
                             tuple(cors_allow_headers))
    settings.auth.build(token_file, host)  # a wrong setting is one line before anything
    check_can_listen(host, port)
    if workers > 1:
        serve_workers(settings, port, workers, log_level, log_format, access_log, loop)
        return
    with open_app(settings) as app:
        _run(app, host, port, log_level, log_format, access_log, loop=loop)


#: ``serve --loop``: uvicorn's choice of event loop. ``auto`` is uvloop where it is installed
#: (the ``http`` extra installs it on Linux and macOS), else asyncio's own.
LOOPS = ("auto", "asyncio", "uvloop")


def check_loop(loop: str) -> None:
    """Refuse a loop that is not one of :data:`LOOPS`, or ``uvloop`` where it is not
    installed (one line, before anything is opened)."""
    if loop not in LOOPS:
        raise InvalidRequest(f"--loop is one of {', '.join(LOOPS)}, not {loop!r}")
    if loop == "uvloop":
        try:
            import uvloop  # noqa: F401
        except ImportError:
            raise InvalidRequest("--loop uvloop: uvloop is not installed (pip install "
                                 "uvloop; not on Windows)") from None


def _run(app: Any, host: str, port: int, log_level: str, log_format: str, access_log: bool,
         **options: Any) -> None:
    import uvicorn

    from allocation_ledger.http import logs
    from allocation_ledger.http.limits import LimitedHttpToolsProtocol

    uvicorn.run(app, host=host, port=port, log_level=log_level,
                log_config=logs.config(log_level, log_format, access_log=access_log),
                access_log=False, http=LimitedHttpToolsProtocol, **options)


@contextmanager
def open_app(settings: ServeSettings) -> Iterator[Starlette]:
    """The application over the ledger ``settings`` name (opened here, with its read side
    and its metrics), closed afterwards."""
    from allocation_ledger.bootstrap import open_ledger

    guard, policy = settings.auth.build(settings.token_file, settings.host)
    with open_ledger(settings.url, read_side=True, group_commit=settings.group_commit) as ledger:
        yield _app_over(ledger, settings, guard, policy)


def _app_over(ledger: Ledger, settings: ServeSettings, guard: Guard, policy: Policy | None,
              lifespan: Any = None) -> Starlette:
    from allocation_ledger.http.app import create_app
    from allocation_ledger.http.cors import settings_of
    from allocation_ledger.metrics import instrument

    read_side = getattr(ledger.read_side, "models", None)
    metrics = instrument(ledger.store, stale_after=settings.stale_after,
                         positions=read_side.positions if read_side else None)
    return create_app(ledger, guard, settings.max_body, metrics, policy,
                      cors=settings_of(settings.cors_origins, settings.cors_allow_headers),
                      lifespan=lifespan)


def serve_workers(settings: ServeSettings, port: int, workers: int,
                  log_level: str, log_format: str, access_log: bool,
                  loop: str = "auto") -> None:
    """``workers`` processes serving ``settings.host:port``, started by uvicorn's process manager
    (its ``workers``: the socket is bound once, here, and shared; a worker that dies is
    started again; SIGINT or SIGTERM stops them all). Each worker opens the store itself
    (:func:`worker_app`): no connection or file handle is shared between processes, and
    what each keeps in memory (cached providers, the candidates index) follows the store,
    where the other workers' appends are. The store is opened once here first, so a store
    that cannot be opened is one line before any worker starts.

    ``/metrics`` counts the requests and commands of every worker (prometheus_client's
    multiprocess mode, in a temporary directory removed at the end); the store's gauges are
    read from the store by the worker that answers the scrape."""
    from allocation_ledger.bootstrap import open_ledger

    with open_ledger(settings.url, read_side=True):
        pass  # tables created, migrations checked, once
    metrics_dir = tempfile.mkdtemp(prefix="ledger-metrics-")
    saved = {name: os.environ.get(name) for name in (SETTINGS_VARIABLE, METRICS_DIR_VARIABLE)}
    os.environ[SETTINGS_VARIABLE] = settings.to_json()
    os.environ[METRICS_DIR_VARIABLE] = metrics_dir  # read by each worker as it starts
    try:
        _run(f"{__name__}:worker_app", settings.host, port, log_level, log_format, access_log,
             factory=True, workers=workers, loop=loop)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(metrics_dir, ignore_errors=True)


def worker_app() -> Starlette:
    """The application of one worker process of ``serve --workers N`` (uvicorn's factory):
    the settings its parent left in the environment, over a store this process opens, and
    closes when uvicorn shuts it down."""
    from allocation_ledger.bootstrap import open_ledger

    settings = ServeSettings.from_json(os.environ[SETTINGS_VARIABLE])
    guard, policy = settings.auth.build(settings.token_file, settings.host)
    ledger = open_ledger(settings.url, read_side=True, group_commit=settings.group_commit)

    @asynccontextmanager
    async def lifespan(_: object) -> Any:
        try:
            yield
        finally:
            ledger.close()

    try:
        return _app_over(ledger, settings, guard, policy, lifespan)
    except BaseException:
        ledger.close()
        raise


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


@dataclass(frozen=True)
class ServeSettings:
    """What every process of ``serve`` builds its application from."""

    url: str | None
    host: str = "127.0.0.1"
    token_file: str | None = None
    max_body: int = MAX_BODY
    stale_after: float = 3600.0
    auth: AuthSettings = AuthSettings()
    group_commit: bool = True
    cors_origins: tuple[str, ...] = ()
    cors_allow_headers: tuple[str, ...] = ()

    def to_json(self) -> str:
        """These settings as JSON (the environment of a worker process)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServeSettings:
        """The settings :meth:`to_json` wrote."""
        found = json.loads(text)
        return cls(**{**found, "auth": AuthSettings(**found["auth"]),
                      "cors_origins": tuple(found["cors_origins"]),
                      "cors_allow_headers": tuple(found["cors_allow_headers"])})


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
