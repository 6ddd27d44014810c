"""Real processes for the crash tests: projection runs, writers, and killing them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def start_script(script: str, *args: str) -> subprocess.Popen[str]:
    """``python scripts/<script> args...`` from the repository root."""
    return _start([str(ROOT / "scripts" / script), *args])


def start_writer(url: str, seed: int, steps: int) -> subprocess.Popen[str]:
    """A process running ``random_ledger.populate`` against ``url``."""
    return _start(["-m", "tests.projections.writer", url, str(seed), str(steps)])


def _start(args: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def kill_hard(process: subprocess.Popen[str]) -> None:
    """SIGKILL: no handler, no cleanup, no rollback but the database's own."""
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)


def wait_until(condition: Callable[[], bool], timeout: float, every: float = 0.01) -> bool:
    """Poll ``condition`` until true (``True``) or ``timeout`` seconds pass (``False``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return condition()
