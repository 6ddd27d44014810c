"""``allocation-ledger demo``: register two hosts, claim, resize across hosts, show usage."""

from __future__ import annotations

import argparse
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from allocation_ledger.application.ledger import Ledger

NAME = "demo"
HELP = "register two hosts, claim, resize an instance across them and show usage"
EXAMPLES = """\
  allocation-ledger demo
  allocation-ledger demo --url sqlite:///demo.db --json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Only the global options."""


def run(args: argparse.Namespace) -> int:
    """Run the demo against the store ``--url`` names."""
    from allocation_ledger.bootstrap import open_ledger
    from allocation_ledger.cli.output import print_json

    with open_ledger(args.url) as ledger:
        steps = _demo(ledger, say=(lambda _: None) if args.json else print)
    if args.json:
        print_json(steps)
    return 0


def _demo(ledger: Ledger, say: Any) -> dict[str, Any]:
    from allocation_ledger.cli.show import print_tree, tree_data

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
    say(f"claimed instance {vm} on {src[:8]}: generation {view.generation}")
    migration = str(uuid.uuid4())
    ledger.swap(vm, migration, view.generation or 0, kind="resize", request=who)
    view = ledger.claim(vm, {dst: {"VCPU": 8, "MEMORY_MB": 16384, "DISK_GB": 80}}, None,
                        project_id="demo-project", user_id="demo-user", request=who)
    say(f"resizing to {dst[:8]} (migration {migration}): both hosts hold it until confirm")
    during = {host: tree_data(ledger.tree(host)) for host in hosts}
    if say is print:
        for host in hosts:
            print_tree(ledger.tree(host))
    ledger.confirm(migration, ledger.migration(migration).generation or 0, request=who)
    say("confirmed: the source is free again")
    after = {host: tree_data(ledger.tree(host)) for host in hosts}
    if say is print:
        for host in hosts:
            print_tree(ledger.tree(host))
    return {"hosts": hosts, "instance": vm, "migration": migration,
            "during_resize": during, "after_confirm": after}
