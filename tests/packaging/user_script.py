"""A user's script of the public API, checked with ``mypy --strict`` as a user would run it
(outside the repository, against the installed package and its ``py.typed``)."""

from __future__ import annotations

import uuid

from allocation_ledger import Ledger, open_ledger


def place(ledger: Ledger, host: str, vm: str) -> int:
    ledger.register_provider(host, "compute-1", inventories={
        "VCPU": {"total": 8, "allocation_ratio": 2.0},
        "MEMORY_MB": {"total": 4096},
    })
    view = ledger.claim(vm, {host: {"VCPU": 2, "MEMORY_MB": 512}}, None,
                        project_id="p", user_id="u", request={"actor": "user-script"})
    generation: int | None = view.generation
    free: int = ledger.provider(host).classes["VCPU"].free
    return (generation or 0) + free


def main() -> None:
    with open_ledger("memory://") as ledger:
        print(place(ledger, str(uuid.uuid4()), str(uuid.uuid4())))


if __name__ == "__main__":
    main()
