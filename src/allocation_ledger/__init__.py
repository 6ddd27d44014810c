"""An event-sourced ledger of cloud resource allocations.

Every claim, swap, confirm, revert and forced move of a server's resources, and every change
of a host's inventory, is an event in one ledger. Consumers (instances, migrations) and
providers (hosts and their nested children) are event streams; a stream's version is its
generation, and the event store's unique (stream, version) key is what enforces it.

Start with :class:`allocation_ledger.Ledger` (see ``bootstrap.open_ledger``).
"""

from allocation_ledger.application.ledger import Ledger
from allocation_ledger.bootstrap import open_ledger

__all__ = ["Ledger", "open_ledger"]
