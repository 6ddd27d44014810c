"""A writer process for the command-id trials; run as a plain script with ``sys.executable``::

    writer.py URL race CID HOST VM START_AT   -> one JSON line: the claim's outcome
    writer.py URL loop PREFIX HOST VM          -> "n" per acknowledged claim, until killed
    writer.py URL persist PREFIX HOST VM       -> the same, retrying a claim with its own
                                                  command id while the store is unavailable

``race`` waits until ``START_AT`` (a ``time.time()``), then claims ``VM`` on ``HOST`` under
command id ``CID``. ``loop`` claims ``VM`` again and again (``n`` = 1, 2, ... with command id
``PREFIX-n`` and the generation the previous claim left), printing each ``n`` only once the
ledger acknowledged it: what a client believes done. ``persist`` is a careful client: told
the store is unavailable or the outcome unknown (or that the host kept changing under it),
it retries the same claim (same id) until the ledger answers, and notes each such answer on
stderr.
"""

from __future__ import annotations

import json
import sys
import time

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.application import command_ids
from allocation_ledger.domain.errors import ConcurrentUpdate, LedgerError, StoreUnavailable

PROJECT, USER = "project-a", "user-a"


def claim_n(ledger: Ledger, prefix: str, host: str, vm: str, n: int) -> object:
    """The ``n``-th claim of the loop (its amount varies, so each is a real change)."""
    return ledger.claim(vm, {host: {"VCPU": 1 + n % 3}}, n - 1 if n > 1 else None,
                        project_id=PROJECT, user_id=USER, command_id=f"{prefix}-{n}")


def opened(url: str, mode: str) -> Ledger:
    """The ledger; a ``persist`` writer waits for a store out of reach."""
    while True:
        try:
            return open_ledger(url)
        except StoreUnavailable:
            if mode != "persist":
                raise
            print("0 StoreUnavailable", file=sys.stderr, flush=True)
            time.sleep(0.2)


def main(url: str, mode: str, *args: str) -> None:
    with opened(url, mode) as ledger:
        if mode == "race":
            cid, host, vm, start_at = args
            time.sleep(max(0.0, float(start_at) - time.time()))
            try:
                view = ledger.claim(vm, {host: {"VCPU": 2}}, None, project_id=PROJECT,
                                    user_id=USER, command_id=cid)
                print(json.dumps({"generation": view.generation, "replayed": view.replayed}))
            except LedgerError as err:
                print(json.dumps({"error": type(err).__name__, "message": str(err)}))
            return
        prefix, host, vm = args
        if mode == "persist":  # it retries itself: the ledger gives up after one try
            command_ids.RECOVERY_ATTEMPTS = 1
        n = 1
        while True:
            try:
                claim_n(ledger, prefix, host, vm, n)
            except (StoreUnavailable, ConcurrentUpdate) as err:
                if mode != "persist":
                    raise
                print(f"{n} {type(err).__name__}", file=sys.stderr, flush=True)
                time.sleep(0.2)
                continue
            print(n, flush=True)
            n += 1


if __name__ == "__main__":
    main(*sys.argv[1:])
