"""Benchmark ``set_devices`` with many ids, beside the floor of its duplicate check.

    python -m benchmarks.set_devices [--stores memory,sqlite,postgresql]
                                     [--sizes 1000,16000,100000] [--repeat 3]
                                     [--postgres-url postgresql://postgres@127.0.0.1:5432/ledger_test]

For each size, one provider per run declares that many distinct device ids (the whole
command: validation, the duplicate check, the held-device check, the append, the view it
returns), and then the same list with one id named twice (refused, naming it). The floor
is the plainest way to check a list for duplicates, ``len(set(ids)) != len(ids)``, timed
in the same run; the ratio says how many floors the command costs. A string in place of the
list (a 1 MB one was read as a million one-character ids before) is refused at once.
Best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.domain.errors import InvalidRequest
from benchmarks.scratch import scratch_store


def best(repeat: int, run: Callable[[], object]) -> float:
    """The shortest of ``repeat`` timed runs, in seconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def has_duplicates(ids: list[str]) -> bool:
    """The floor: the plainest duplicate check."""
    return len(set(ids)) != len(ids)


def declare(ledger: Ledger, ids: list[str]) -> None:
    """A fresh provider declares ``ids`` (the whole command)."""
    provider = str(uuid.uuid4())
    ledger.register_provider(provider, f"gpu-host-{provider[:8]}")
    ledger.set_devices(provider, "VGPU", ids, 1)


def refused(ledger: Ledger, ids: list[str] | str) -> None:
    """``set_devices`` with ``ids`` must be refused."""
    provider = str(uuid.uuid4())
    ledger.register_provider(provider, f"gpu-host-{provider[:8]}")
    try:
        ledger.set_devices(provider, "VGPU", ids, 1)
    except InvalidRequest:
        return
    raise SystemExit(f"set_devices accepted {type(ids).__name__} of {len(ids)}")


def run(kind: str, url: str, sizes: list[int], repeat: int) -> None:
    """Print one line per size for the store at ``url``."""
    with open_ledger(url) as ledger:
        for size in sizes:
            ids = [f"0000:{i // 256:02x}:{i % 256:02x}.{i % 8}-{i}" for i in range(size)]
            doubled = [*ids[:-1], ids[0]]
            floor = best(repeat, partial(has_duplicates, ids))
            took = best(repeat, partial(declare, ledger, ids))
            dup = best(repeat, partial(refused, ledger, doubled))
            print(f"{kind:<10} {size:>7,} ids: set_devices {took * 1000:8.1f} ms "
                  f"({took / floor:6.0f}x the set() floor of {floor * 1000:.2f} ms); "
                  f"one id twice refused in {dup * 1000:7.1f} ms", flush=True)
        big = "x" * 1_000_000
        took = best(repeat, lambda: refused(ledger, big))
        print(f"{kind:<10} a 1 MB string as the ids: refused in "
              f"{took * 1000:.1f} ms", flush=True)


def main() -> None:
    """Parse the options, run every store."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="memory,sqlite,postgresql")
    parser.add_argument("--sizes", default="1000,16000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres-url",
                        default="postgresql://postgres@127.0.0.1:5432/ledger_test")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.stores.split(","):
            with scratch_store(kind, Path(tmp), args.postgres_url, "set_devices") as url:
                run(kind, url, sizes, args.repeat)


if __name__ == "__main__":
    main()
