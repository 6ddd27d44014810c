"""Two local PostgreSQL clusters, a primary and a synchronous streaming standby, for the
failover trial: made with Debian's ``pg_createcluster`` and ``pg_basebackup`` on ports of
this issue's own (5446, 5447), on 127.0.0.1 only, trust authentication, removed afterwards.

After :meth:`Pair.fail_over` (the primary stopped with ``-m immediate``, the standby
promoted), :meth:`Pair.rebuild_standby` makes the old primary a standby of the new one, so
trials can go on alternating roles.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import psycopg

VERSION = "15"
NAMES = {5446: "issue11_a", 5447: "issue11_b"}
SETTINGS = """
listen_addresses = '127.0.0.1'
wal_level = replica
max_wal_senders = 10
hot_standby = on
synchronous_commit = on
fsync = off
full_page_writes = off
shared_buffers = 32MB
"""
HBA = """
local all all trust
host all all 127.0.0.1/32 trust
local replication all trust
host replication all 127.0.0.1/32 trust
"""


def _run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=120).stdout


def _sql(port: int, statement: str, dbname: str = "postgres") -> None:
    with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname=dbname,
                         autocommit=True, connect_timeout=5) as conn:
        conn.execute(statement)


def _wait_ready(port: int, writable: bool, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while True:
        try:
            with psycopg.connect(host="127.0.0.1", port=port, user="postgres",
                                 dbname="postgres", connect_timeout=2) as conn:
                row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
                if row is not None and row[0] is not writable:
                    return
        except psycopg.Error:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"cluster on port {port} not ready")
        time.sleep(0.2)


class Pair:
    """The two clusters; ``primary`` and ``standby`` are their ports."""

    def __init__(self) -> None:
        self.primary, self.standby = 5446, 5447

    def url(self, dbname: str = "ledger") -> str:
        """The multi-host URL of both."""
        return (f"postgresql://postgres@127.0.0.1:{self.primary},127.0.0.1:{self.standby}/"
                f"{dbname}?target_session_attrs=read-write&connect_timeout=1")

    def create(self) -> None:
        """Both clusters, the primary started with database ``ledger``, the standby following."""
        self.remove()
        for port, name in NAMES.items():
            _run("pg_createcluster", VERSION, name, "-p", str(port))
            conf = Path(f"/etc/postgresql/{VERSION}/{name}")
            (conf / "conf.d" / "issue11.conf").write_text(SETTINGS)
            (conf / "pg_hba.conf").write_text(HBA)
        _run("pg_ctlcluster", VERSION, NAMES[self.primary], "start")
        _wait_ready(self.primary, writable=True)
        _sql(self.primary, "CREATE DATABASE ledger")
        self.rebuild_standby()

    def rebuild_standby(self) -> None:
        """Make the standby port a fresh synchronous standby of the primary."""
        name = NAMES[self.standby]
        subprocess.run(["pg_ctlcluster", VERSION, name, "stop", "-m", "immediate"],
                       capture_output=True, check=False, timeout=60)
        data = Path(f"/var/lib/postgresql/{VERSION}/{name}")
        for child in data.iterdir():  # the directory itself stays, owned by postgres
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        _run("runuser", "-u", "postgres", "--", "pg_basebackup", "-h", "127.0.0.1", "-p",
             str(self.primary), "-U", "postgres", "-D", str(data), "-R", "-X", "stream",
             "-c", "fast")
        (data / "standby.signal").touch()
        _run("pg_ctlcluster", VERSION, name, "start")
        _wait_ready(self.standby, writable=False)
        _sql(self.primary, "ALTER SYSTEM SET synchronous_standby_names = '*'")
        _sql(self.primary, "SELECT pg_reload_conf()")
        deadline = time.monotonic() + 30
        while True:  # until the standby streams synchronously
            with psycopg.connect(host="127.0.0.1", port=self.primary, user="postgres",
                                 dbname="postgres") as conn:
                row = conn.execute("SELECT count(*) FROM pg_stat_replication WHERE "
                                   "sync_state = 'sync'").fetchone()
            if row is not None and row[0] == 1:
                return
            if time.monotonic() > deadline:
                raise TimeoutError("the standby is not synchronous")
            time.sleep(0.2)

    def fail_over(self, promote_after: float = 0.0) -> None:
        """Stop the primary with ``-m immediate`` and promote the standby (after
        ``promote_after`` seconds without any primary)."""
        _run("pg_ctlcluster", VERSION, NAMES[self.primary], "stop", "-m", "immediate")
        time.sleep(promote_after)
        _run("pg_ctlcluster", VERSION, NAMES[self.standby], "promote")
        _wait_ready(self.standby, writable=True)
        # alone now: commits must not wait for a standby that is not there
        _sql(self.standby, "ALTER SYSTEM SET synchronous_standby_names = ''")
        _sql(self.standby, "SELECT pg_reload_conf()")
        self.primary, self.standby = self.standby, self.primary

    def remove(self) -> None:
        """Drop both clusters (stopping them first)."""
        for name in NAMES.values():
            subprocess.run(["pg_dropcluster", "--stop", VERSION, name], capture_output=True,
                           check=False, timeout=120)
