"""Adapters: the event store (the ``eventsourcing`` library) configured for the ledger."""
