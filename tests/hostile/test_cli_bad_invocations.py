"""The command line under bad invocations: every subcommand with bad URLs, ids, times,
positions and files prints exactly one line on stderr, never a traceback, exits 2 for bad
usage or values and 1 for a refused or failed operation, and creates no file and no schema.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from allocation_ledger import open_ledger
from allocation_ledger.cli import main
from tests.builders import a_host
from tests.stores import postgres_base_url, require_postgres

UNKNOWN = "6f1c1bd4-8d5e-4f1b-9d7e-3d1f6a4e2b10"
INJECTION = 'x";COMMIT;CREATE/**/TABLE/**/public.pwned(i/**/int);--'
GOOD = "sqlite:///good.db"
TYPO = "sqlite:///typo.db"
TOO_FAR = str(2**63)

#: (exit code, argv): {pg} is the test PostgreSQL database, {missing} a schema that is not.
BAD = [
    # a ledger that is not there: reads say so and create nothing
    (1, ["audit", "--url", TYPO]),
    (1, ["show", "provider", UNKNOWN, "--url", TYPO]),
    (1, ["history", "provider", UNKNOWN, "--url", TYPO]),
    (1, ["history", "ledger", "--url", TYPO]),
    (1, ["state-at", "hosts", "--url", TYPO]),
    (1, ["projections", "status", "--url", TYPO]),
    (1, ["projections", "rebuild", "--url", TYPO]),
    (1, ["list", "providers", "--url", TYPO]),
    (1, ["usage", "--project", "p1", "--url", TYPO]),
    (1, ["metrics", "--url", TYPO]),
    (1, ["digest", "--url", TYPO]),
    (1, ["repair", "--stale-after", "60", "--action", "revert", "--url", TYPO]),
    (1, ["audit", "--url", "sqlite:///no/such/dir/ledger.db"]),
    (1, ["audit", "--url", "sqlite:///adir"]),
    (1, ["audit", "--url", "sqlite:///garbage.db"]),
    (1, ["state-at", "hosts", "--url", "sqlite:///garbage.db"]),
    (1, ["demo", "--url", "sqlite:///adir"]),
    (1, ["demo", "--url", "sqlite:///garbage.db"]),
    # things that are not in the ledger
    (1, ["history", "provider", UNKNOWN, "--url", GOOD]),
    (1, ["history", "migration", UNKNOWN, "--url", GOOD]),
    (1, ["show", "provider", UNKNOWN, "--url", GOOD]),
    (1, ["show", "migration", UNKNOWN, "--url", GOOD]),
    (1, ["projections", "status", "--url", GOOD]),  # never built
    # bad URLs
    (2, ["audit", "--url", "mysql://u@h/db"]),
    (2, ["demo", "--url", "mysql://u@h/db"]),
    (2, ["audit", "--url", "sqlite://"]),
    (2, ["audit", "--url", "sqlite:///good.db?mode=ro"]),
    (2, ["audit", "--url", "postgresql://u@h:99999/db"]),
    (2, ["audit", "--url", "postgresql://u@h:port/db"]),
    (2, ["audit", "--url", "postgresql://u@h/db?pool_size=abc"]),
    (2, ["audit", "--url", "postgresql://u@h/db?schem=x"]),
    (2, ["audit", "--url", f"postgresql://u@h/db?schema={INJECTION}"]),
    (2, ["projections", "rebuild", "--url", GOOD, "--projections-url", "nope://"]),
    (2, ["projections", "rebuild", "--url", GOOD, "--projections-url",
         f"postgresql://u@h/db?schema={INJECTION}"]),
    # bad ids, times, positions and numbers
    (2, ["show", "provider", "zzz", "--url", GOOD]),
    (2, ["show", "consumer", UNKNOWN + "0", "--url", GOOD]),
    (2, ["history", "provider", "zzz", "--url", GOOD]),
    (2, ["history", "consumer", "--url", GOOD]),
    (2, ["state-at", "provider", "--url", GOOD]),
    (2, ["state-at", "provider", "zzz", "--url", GOOD]),
    (2, ["state-at", "hosts", "--url", GOOD, "--position", TOO_FAR]),
    (2, ["state-at", "hosts", "--url", GOOD, "--position", "-1"]),
    (2, ["state-at", "hosts", "--url", GOOD, "--at", "yesterday"]),
    (2, ["state-at", "hosts", "--url", GOOD, "--at", "2026-01-01", "--position", "1"]),
    (2, ["audit", "--url", GOOD, "--from-position", TOO_FAR]),
    (2, ["audit", "--url", GOOD, "--to-position", "abc"]),
    (2, ["audit", "--url", GOOD, "--stale-after", "nan"]),
    (2, ["audit", "--url", GOOD, "--stale-after", "-1"]),
    (2, ["audit", "--url", GOOD, "--until", "not-a-time"]),
    (2, ["history", "ledger", "--url", GOOD, "--from-position", TOO_FAR]),
    (2, ["history", "ledger", "--url", GOOD, "--since", "soon"]),
    (2, ["projections", "rebuild", "--url", GOOD, "--batch-size", "0"]),
    (2, ["projections", "follow", "--url", GOOD, "--poll-interval", "inf"]),
    (2, ["projections", "resume", "--url", GOOD, "--name", "hosts"]),
    # bad usage
    (2, []),
    (2, ["nosuchcommand"]),
    (2, ["show"]),
    (2, ["show", "host", UNKNOWN]),
    (2, ["audit", "--no-such-option"]),
]

PG_BAD = [
    (1, ["audit", "--url", "postgresql://postgres@127.0.0.1:1/ledger_test"]),
    (1, ["audit", "--url", "postgresql://nouser_issue13@{host}/ledger_test"]),
    (1, ["audit", "--url", "postgresql://postgres@{host}/nodb_issue13"]),
    (1, ["audit", "--url", "{pg}?schema={missing}"]),
    (1, ["show", "provider", UNKNOWN, "--url", "{pg}?schema={missing}"]),
    (1, ["history", "ledger", "--url", "{pg}?schema={missing}"]),
    (1, ["state-at", "hosts", "--url", "{pg}?schema={missing}"]),
    (1, ["projections", "status", "--url", "{pg}?schema={missing}"]),
    (1, ["projections", "rebuild", "--url", "{pg}?schema={missing}"]),
    (1, ["list", "providers", "--url", "{pg}?schema={missing}"]),
    (1, ["usage", "--project", "p1", "--url", "{pg}?schema={missing}"]),
    (2, ["projections", "status", "--url", GOOD, "--projections-url",
         f"{{pg}}?schema={INJECTION}"]),
]


def files(root: Path) -> set[tuple[str, int]]:
    """Every file and directory under ``root``, with its size."""
    return {(str(p.relative_to(root)), p.stat().st_size if p.is_file() else -1)
            for p in root.rglob("*")}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory holding a good ledger, a directory and a garbage file; the cwd."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LEDGER_URL", raising=False)
    monkeypatch.delenv("PROJECTIONS_URL", raising=False)
    with open_ledger(GOOD) as ledger:
        a_host(ledger)
    (tmp_path / "adir").mkdir()
    (tmp_path / "garbage.db").write_bytes(b"this is not a database\n" * 200)
    return tmp_path


def one_failure(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    """Run the CLI; its exit code and its only line on stderr."""
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's usage errors
        code = exit_.code if isinstance(exit_.code, int) else 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    return code, err


@pytest.mark.parametrize(("code", "argv"), BAD, ids=[" ".join(a)[:60] for _, a in BAD])
def test_a_bad_invocation_is_one_line_and_the_right_code(
        workdir: Path, capsys: pytest.CaptureFixture[str], code: int, argv: list[str]) -> None:
    before = files(workdir)
    assert one_failure(capsys, argv)[0] == code
    assert files(workdir) == before


@pytest.mark.postgres
@pytest.mark.parametrize(("code", "argv"), PG_BAD, ids=[" ".join(a)[:60] for _, a in PG_BAD])
def test_a_bad_postgres_invocation_is_one_line_and_creates_no_schema(
        workdir: Path, capsys: pytest.CaptureFixture[str], code: int, argv: list[str]) -> None:
    base = require_postgres()
    missing = f"missing_{uuid.uuid4().hex[:12]}"
    host = base.split("@", 1)[1].split("/", 1)[0]
    filled = [a.format(pg=postgres_base_url(), missing=missing, host=host) for a in argv]
    before = files(workdir)
    assert one_failure(capsys, filled)[0] == code
    assert files(workdir) == before
    with psycopg.connect(base) as conn:
        made = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname = %s OR "
                            "nspname LIKE 'x%%'", (missing,)).fetchall()
        pwned = conn.execute("SELECT 1 FROM pg_tables WHERE tablename = 'pwned'").fetchall()
    assert (made, pwned) == ([], [])


def test_debug_shows_the_traceback(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(Exception, match="does not exist"):
        main(["--debug", "audit", "--url", TYPO])
    with pytest.raises(Exception, match="does not exist"):
        main(["audit", "--debug", "--url", TYPO])


def cli(*argv: str) -> subprocess.Popen[str]:
    """The console entry point (``allocation-ledger``'s ``main``) in a process of its own."""
    env = {k: v for k, v in os.environ.items() if k not in ("LEDGER_URL", "PROJECTIONS_URL")}
    entry = "from allocation_ledger.cli import main; raise SystemExit(main())"
    return subprocess.Popen([sys.executable, "-c", entry, *argv], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_console_command_fails_in_one_line_on_an_unreachable_server() -> None:
    done = cli("audit", "--url", "postgresql://postgres@127.0.0.1:1/ledger_test")
    out, err = done.communicate(timeout=60)
    assert (done.returncode, out) == (1, "")
    assert err.splitlines() == [err.strip()] and "Connection refused" in err


def test_follow_waits_for_an_unreachable_server_and_stops_cleanly() -> None:
    follower = cli("projections", "follow", "--poll-interval", "0.2",
                   "--url", "postgresql://postgres@127.0.0.1:1/ledger_test")
    assert follower.stderr is not None
    said = follower.stderr.readline()  # once it has tried
    assert "Connection refused" in said and "retrying every 0.2s" in said
    time.sleep(1)
    assert follower.poll() is None  # still waiting, as it would once running
    follower.send_signal(signal.SIGTERM)
    _, err = follower.communicate(timeout=30)
    assert follower.returncode == 128 + signal.SIGTERM, said + err
    assert err == ""  # nothing more than the one line
