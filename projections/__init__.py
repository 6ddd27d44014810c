"""The read side: projections of the ledger into SQL tables, rebuilt and resumed exactly.

Four projections, one module each, every one a set of ``functools.singledispatch``
handlers over the domain's events (:mod:`allocation_ledger.projections.projection`):

- ``host_usage`` (:mod:`~.host_usage`): providers, and usage per provider and
  class with capacity, free and over-capacity;
- ``allocations`` (:mod:`~.allocations`): consumers and their allocations;
- ``devices`` (:mod:`~.devices`): who holds each device now;
- ``migrations`` (:mod:`~.migrations`): every move's context, and the old and
  new devices of those in flight.

Their tables (:mod:`~.tables`, all ``proj_*``) live in the ledger's own database
unless another is named (:mod:`~.store`). The runner (:mod:`~.runner`)
reads the ledger once, in order, and writes each batch's rows together with every
projection's new position in one transaction (:mod:`~.tracking`), ending batches
only where commands ended: exactly once, across crashes and racing runners. It follows new
events through the event store's subscription (LISTEN/NOTIFY on PostgreSQL), polling as a
fallback. :class:`~.readmodels.ReadModels` is the entry point (rebuild, resume,
follow, wait for a position); :mod:`~.queries` answers an operator's questions;
:mod:`allocation_ledger.cli.projections` is ``allocation-ledger projections``.
"""
