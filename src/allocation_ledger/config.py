"""Configuration: which store the ledger uses, chosen by one URL.

- ``sqlite:///ledger.db`` (the default: a file in the working directory; ``sqlite:////abs``)
- ``postgresql://user:password@host:port/dbname`` (psycopg 3; optional parameters
  ``schema``, ``pool_size``, ``max_overflow``, ``lock_timeout``, ``connect_timeout``
  (seconds to wait for a connection), ``target_session_attrs``); several hosts
  (``postgresql://h1:5432,h2:5433/db?target_session_attrs=read-write``) are tried in turn
  by libpq, which with ``read-write`` connects only to the primary: after a failover the
  ledger's next connection finds the promoted standby
- ``memory://`` (an in-process store, for tests and experiments)

The URL comes from the caller, else the ``LEDGER_URL`` environment variable, else the
default. Nothing here runs at import time.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from allocation_ledger.domain.errors import InvalidRequest

DEFAULT_URL = "sqlite:///ledger.db"
URL_ENV_VAR = "LEDGER_URL"
CACHE_SIZE = 10_000
POSTGRES_PARAMETERS = frozenset({"schema", "pool_size", "max_overflow", "lock_timeout",
                                 "connect_timeout", "target_session_attrs"})
#: the session attributes a multi-host URL asked for (libpq's ``target_session_attrs``)
SESSION_ATTRS_KEY = "LEDGER_TARGET_SESSION_ATTRS"
FAILOVER_FACTORY = "allocation_ledger.adapters.failover:FailoverPostgresFactory"
#: A schema name is a plain SQL identifier; it is still quoted wherever it reaches SQL.
SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
#: Integer parameters and their smallest allowed value.
INTEGER_PARAMETERS = {"pool_size": 1, "max_overflow": 0, "lock_timeout": 0,
                      "connect_timeout": 1}


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


def parse_url(url: str | None = None) -> StoreConfig:
    """Turn a store URL into settings; :class:`InvalidRequest` for one we cannot use."""
    url = resolve_url(url)
    if not isinstance(url, str) or not url.isprintable():
        raise InvalidRequest(f"a store URL is printable text, got {url!r}", url=url)
    parts = urlsplit(url)
    scheme = parts.scheme.split("+")[0]
    common = {
        "AGGREGATE_CACHE_MAXSIZE": str(CACHE_SIZE),
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
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": path,
            "SQLITE_LOCK_TIMEOUT": "30",
            "APPLICATION_RECORDER_TOPIC":
                "allocation_ledger.adapters.sqlite:QueuedSQLiteApplicationRecorder",
        })
    if scheme in ("postgresql", "postgres"):
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = sorted(set(query) - POSTGRES_PARAMETERS)
        if unknown:
            raise InvalidRequest(
                f"unknown parameters {', '.join(unknown)} in {url!r}: supported are "
                f"{', '.join(sorted(POSTGRES_PARAMETERS))}", url=url,
            )
        dbname = unquote(parts.path.lstrip("/"))
        if not dbname:
            raise InvalidRequest(f"no database name in {url!r}", url=url)
        _check_parameters(query, url)
        hosts, ports = _hosts(url, parts.netloc.rpartition("@")[2])
        user, _, password = parts.netloc.rpartition("@")[0].partition(":")
        env = {
            **common,
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_DBNAME": dbname,
            "POSTGRES_HOST": hosts,
            "POSTGRES_PORT": ports,
            "POSTGRES_USER": unquote(user or os.environ.get("USER", "postgres")),
            "POSTGRES_PASSWORD": unquote(password),
            "POSTGRES_POOL_SIZE": query.get("pool_size", "5"),
            "POSTGRES_MAX_OVERFLOW": query.get("max_overflow", "10"),
            "POSTGRES_LOCK_TIMEOUT": query.get("lock_timeout", "10"),
            "POSTGRES_ENABLE_DB_FUNCTIONS": "n",
            # the recorder creates the schema where there is none, and nothing otherwise
            "CREATE_TABLE": "n",
            "APPLICATION_RECORDER_TOPIC":
                "allocation_ledger.adapters.postgres:OneTripApplicationRecorder",
        }
        if "schema" in query:
            env["POSTGRES_SCHEMA"] = query["schema"]
        if "connect_timeout" in query:
            env["POSTGRES_CONNECT_TIMEOUT"] = query["connect_timeout"]
        if "target_session_attrs" in query:  # the library's factory does not pass it on
            env[SESSION_ATTRS_KEY] = query["target_session_attrs"]
            env["PERSISTENCE_MODULE"] = FAILOVER_FACTORY
        return StoreConfig(url, "postgresql", env)
    raise InvalidRequest(
        f"unsupported store URL {url!r}: use sqlite:///path, postgresql://... or memory://",
        url=url,
    )


def _hosts(url: str, hostlist: str) -> tuple[str, str]:
    """``h1:5432,h2:5433`` as libpq's host and port lists (``h1,h2`` and ``5432,5433``)."""
    hosts, ports = [], []
    for item in (hostlist or "127.0.0.1").split(","):
        host, _, port = item.partition(":")
        if port and not (port.isascii() and port.isdecimal() and 1 <= int(port) <= 65535):
            raise InvalidRequest(f"bad port in {url!r}: a number from 1 to 65535", url=url)
        hosts.append(unquote(host) or "127.0.0.1")
        ports.append(port or "5432")
    return ",".join(hosts), ",".join(ports)


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
