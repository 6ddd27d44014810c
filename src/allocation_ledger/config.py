"""Configuration: which store the ledger uses, chosen by one URL.

- ``sqlite:///ledger.db`` (the default: a file in the working directory; ``sqlite:////abs``)
- ``postgresql://user:password@host:port/dbname`` (psycopg 3): any libpq URI, with libpq's
  own query parameters (``?sslmode=verify-full&sslrootcert=...``,
  ``?host=/var/run/postgresql``, ``?options=...``) passed through to libpq, and whatever the
  URL leaves out taken by libpq from the ``PG*`` variables (``PGUSER``, ``PGHOST``,
  ``PGPASSWORD``, ``PGSSLMODE``...) or ``~/.pgpass``; plus the ledger's own parameters
  ``schema``, ``pool_size``, ``max_overflow``, ``lock_timeout``. Several hosts
  (``postgresql://h1:5432,h2:5433/db?target_session_attrs=read-write``) are tried in turn
  by libpq, which with ``read-write`` connects only to the primary: after a failover the
  ledger's next connection finds the promoted standby. libpq's ``connect_timeout`` also
  bounds how long the ledger waits for a connection from its pool
- ``memory://`` (an in-process store, for tests and experiments)

The URL comes from the caller, else the ``LEDGER_URL`` environment variable, else the
default. ``LEDGER_CACHE_SIZE`` (default 200,000) is how many aggregates a process keeps in
its cache: a claim on a cached host reads nothing, so it should exceed the number of hosts
one process writes to (an entry is a few kilobytes, and only streams used take one).
Nothing here runs at import time.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from allocation_ledger.domain.errors import InvalidRequest

DEFAULT_URL = "sqlite:///ledger.db"
URL_ENV_VAR = "LEDGER_URL"
CACHE_SIZE = 200_000
CACHE_SIZE_ENV_VAR = "LEDGER_CACHE_SIZE"
POSTGRES_PARAMETERS = frozenset({"schema", "pool_size", "max_overflow", "lock_timeout"})
#: A schema name is a plain SQL identifier; it is still quoted wherever it reaches SQL.
SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
#: Integer parameters and their smallest allowed value.
INTEGER_PARAMETERS = {"pool_size": 1, "max_overflow": 0, "lock_timeout": 0}
#: The environment key of the libpq connection string (read by the store's factory).
CONNINFO = "LEDGER_POSTGRES_CONNINFO"


@dataclass(frozen=True)
class StoreConfig:
    """A parsed store URL and the ``eventsourcing`` settings it stands for."""

    url: str
    kind: str  # "memory", "sqlite" or "postgresql"
    env: dict[str, str]

    @property
    def redacted_url(self) -> str:
        """The URL with any password masked, for logs and reports."""
        parts = urlsplit(self.url)
        if parts.password:
            netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
            return parts._replace(netloc=netloc).geturl()
        return self.url


def resolve_url(url: str | None = None) -> str:
    """The URL to use: the argument, else ``$LEDGER_URL``, else the SQLite default."""
    return url or os.environ.get(URL_ENV_VAR) or DEFAULT_URL


def cache_size() -> int:
    """``$LEDGER_CACHE_SIZE``, else :data:`CACHE_SIZE`; :class:`InvalidRequest` unless a
    positive number."""
    text = os.environ.get(CACHE_SIZE_ENV_VAR) or str(CACHE_SIZE)
    try:
        size = int(text)
    except ValueError:
        size = 0
    if size < 1:
        raise InvalidRequest(f"{CACHE_SIZE_ENV_VAR} must be a positive number, got {text!r}",
                             cache_size=text)
    return size


def parse_url(url: str | None = None) -> StoreConfig:
    """Turn a store URL into settings; :class:`InvalidRequest` for one we cannot use."""
    url = resolve_url(url)
    if not isinstance(url, str) or not url.isprintable():
        raise InvalidRequest(f"a store URL is printable text, got {url!r}", url=url)
    parts = urlsplit(url)
    scheme = parts.scheme.split("+")[0]
    common = {
        "AGGREGATE_CACHE_MAXSIZE": str(cache_size()),
        "AGGREGATE_CACHE_FASTFORWARD": "y",
        "AGGREGATE_CACHE_FASTFORWARD_SKIPPING": "n",
        "DEEPCOPY_FROM_AGGREGATE_CACHE": "y",
        "CREATE_TABLE": "y",
    }
    if scheme not in {"postgresql", "postgres"} and parts.query:
        raise InvalidRequest(f"{scheme} URLs take no parameters: {url!r}", url=url)
    if scheme == "memory":
        return StoreConfig(url, "memory", {**common, "PERSISTENCE_MODULE": "eventsourcing.popo"})
    if scheme == "sqlite":
        path = unquote(url.split("://", 1)[1])
        path = path[1:] if path.startswith("/") else path
        if not path:
            raise InvalidRequest(f"no database file in {url!r}", url=url)
        return StoreConfig(url, "sqlite", {
            **common,
            "PERSISTENCE_MODULE":
                "allocation_ledger.adapters.sqlite:StatementCachingSQLiteFactory",
            "SQLITE_DBNAME": path,
            "SQLITE_LOCK_TIMEOUT": "30",
            "APPLICATION_RECORDER_TOPIC":
                "allocation_ledger.adapters.sqlite:QueuedSQLiteApplicationRecorder",
        })
    if scheme in ("postgresql", "postgres"):
        return StoreConfig(url, "postgresql", {**common, **postgres_env(url)})
    raise InvalidRequest(
        f"unsupported store URL {url!r}: use sqlite:///path, postgresql://... or memory://",
        url=url,
    )


def postgres_env(url: str) -> dict[str, str]:
    """The settings of a PostgreSQL URL: the ledger's own parameters taken out, the rest
    parsed by libpq itself (through psycopg) into the connection string the store's pool
    uses; :class:`InvalidRequest` for anything libpq refuses."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = {k: v for k, v in query if k in POSTGRES_PARAMETERS}
    _check_parameters(ours, url)
    libpq = [(k, v) for k, v in query if k not in POSTGRES_PARAMETERS]
    scheme = "postgresql" if parts.scheme.split("+")[0] == "postgresql" else "postgres"
    # by hand: urlunsplit drops the "//" of an empty host ("postgresql:///db")
    plain = f"{scheme}://{parts.netloc}{parts.path}" + (f"?{urlencode(libpq)}" if libpq else "")
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(plain).items() if v is not None}
    except ProgrammingError as err:
        raise InvalidRequest(
            f"libpq refuses {StoreConfig(url, 'postgresql', {}).redacted_url!r}: "
            f"{str(err).strip()} (the ledger's own parameters are "
            f"{', '.join(sorted(POSTGRES_PARAMETERS))})", url=url) from None
    _check_port(params.get("port"), url)
    dbname = params.get("dbname") or os.environ.get("PGDATABASE", "")
    if not dbname:
        raise InvalidRequest(f"no database name in {url!r} (nor in $PGDATABASE)", url=url)
    env = {
        "PERSISTENCE_MODULE": "allocation_ledger.adapters.postgres:ConninfoPostgresFactory",
        CONNINFO: make_conninfo(**params),
        "POSTGRES_DBNAME": dbname,
        "POSTGRES_HOST": params.get("host", ""),
        "POSTGRES_PORT": params.get("port", ""),
        "POSTGRES_USER": params.get("user", ""),
        "POSTGRES_PASSWORD": params.get("password", ""),
        "POSTGRES_POOL_SIZE": ours.get("pool_size", "5"),
        "POSTGRES_MAX_OVERFLOW": ours.get("max_overflow", "10"),
        "POSTGRES_LOCK_TIMEOUT": ours.get("lock_timeout", "10"),
        "POSTGRES_ENABLE_DB_FUNCTIONS": "n",
        # the recorder creates the schema where there is none, and nothing otherwise
        "CREATE_TABLE": "n",
        "APPLICATION_RECORDER_TOPIC":
            "allocation_ledger.adapters.postgres:OneTripApplicationRecorder",
    }
    if "schema" in ours:
        env["POSTGRES_SCHEMA"] = ours["schema"]
    if params.get("connect_timeout"):  # else the pool waits 30 s for a lost server
        env["POSTGRES_CONNECT_TIMEOUT"] = params["connect_timeout"]
    return env


def _check_port(port: str | None, url: str) -> None:
    """Each port libpq was given (one per host) must be a number from 1 to 65535."""
    for one in (port or "").split(","):
        if one and not (one.isascii() and one.isdecimal() and 1 <= int(one) <= 65535):
            raise InvalidRequest(f"bad port {one!r} in {url!r}: a number from 1 to 65535",
                                 url=url)


def _check_parameters(query: dict[str, str], url: str) -> None:
    """Refuse a schema that is not a plain identifier (it must never carry SQL) and integer
    parameters that are not integers in range."""
    schema = query.get("schema")
    if schema is not None and not SCHEMA_NAME.fullmatch(schema):
        raise InvalidRequest(
            f"bad schema name {schema!r} in {url!r}: letters, digits and _, not starting "
            "with a digit, at most 63", url=url, schema=schema)
    for name, least in INTEGER_PARAMETERS.items():
        value = query.get(name)
        number = value is not None and value.isascii() and value.isdecimal()
        if value is not None and not (number and int(value) >= least):
            raise InvalidRequest(f"bad {name} {value!r} in {url!r}: an integer of at least "
                                 f"{least}", url=url, **{name: value})
