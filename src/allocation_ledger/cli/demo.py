"""``allocation-ledger demo``: register two hosts, claim, resize across hosts, show usage."""

from __future__ import annotations

import argparse
import uuid

from allocation_ledger.application.ledger import Ledger
from allocation_ledger.bootstrap import open_ledger
from allocation_ledger.cli.show import print_host

NAME = "demo"
HELP = "register two hosts, claim, resize an instance across them and show usage"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options beyond --url."""


def run(args: argparse.Namespace) -> int:
    """Run the demo against the store ``--url`` names."""
    with open_ledger(args.url) as ledger:
        _demo(ledger)
    return 0


def _demo(ledger: Ledger) -> None:
    hosts = []
    for name in ("compute-1", "compute-2"):
        host = str(uuid.uuid4())
        ledger.register_provider(host, f"{name}-{host[:8]}", inventories={
            "VCPU": {"total": 16, "allocation_ratio": 4.0},
            "MEMORY_MB": {"total": 65536, "reserved": 512},
            "DISK_GB": {"total": 1000},
        })
        hosts.append(host)
    src, dst = hosts
    who = {"actor": "demo", "reason": "allocation-ledger demo"}
    vm = str(uuid.uuid4())
    view = ledger.claim(vm, {src: {"VCPU": 4, "MEMORY_MB": 8192, "DISK_GB": 40}}, None,
                        project_id="demo-project", user_id="demo-user", request=who)
    print(f"claimed instance {vm} on {src[:8]}: generation {view.generation}")
    migration = str(uuid.uuid4())
    ledger.swap(vm, migration, view.generation or 0, kind="resize", request=who)
    view = ledger.claim(vm, {dst: {"VCPU": 8, "MEMORY_MB": 16384, "DISK_GB": 80}}, None,
                        project_id="demo-project", user_id="demo-user", request=who)
    print(f"resizing to {dst[:8]} (migration {migration}): both hosts hold it until confirm")
    for host in hosts:
        print_host(ledger, host)
    ledger.confirm(migration, ledger.migration(migration).generation or 0, request=who)
    print("confirmed: the source is free again")
    for host in hosts:
        print_host(ledger, host)
