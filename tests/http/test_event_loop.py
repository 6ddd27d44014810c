"""``serve --loop``: uvloop where it is installed (the default), asyncio's own loop on
request, and a loop that cannot be had refused in one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.http.server import check_loop, spawned
from benchmarks.cpu import child_with
from benchmarks.over_http import over_http
from benchmarks.scratch import scratch_store


def _uvloop_loaded(pid: int) -> bool:
    """True when the process has uvloop's extension module mapped."""
    return any("uvloop" in line and ".so" in line
               for line in Path(f"/proc/{pid}/maps").read_text().splitlines())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("loop, uvloop", [("auto", True), ("asyncio", False),
                                          ("uvloop", True)])
def test_the_server_runs_on_the_loop_asked_for(tmp_path: Path, loop: str,
                                               uvloop: bool) -> None:
    pytest.importorskip("uvloop")
    with scratch_store("sqlite", tmp_path, "postgresql://unused", "loop") as url, \
            spawned(url, args=["--loop", loop]) as port:
        assert over_http(port, 2, 4) > 0  # it answers claims on that loop
        pid = child_with(f"127.0.0.1:{port}")
        assert pid is not None
        assert _uvloop_loaded(pid) is uvloop


def test_uvloop_not_installed_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    with pytest.raises(InvalidRequest, match="uvloop is not installed"):
        check_loop("uvloop")
    check_loop("auto")  # uvicorn falls back to asyncio's loop by itself
    check_loop("asyncio")


def test_an_unknown_loop_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="--loop is one of auto, asyncio, uvloop"):
        check_loop("trio")
