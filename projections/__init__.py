"""The read side: projections of the ledger into SQL tables, rebuilt and resumed exactly.

Four projections, one module each, every one a set of ``functools.singledispatch``
handlers over the domain's events (:mod:`projections.projection`):

- ``host_usage`` (:mod:`~projections.host_usage`): providers, and usage per provider and
  class with capacity, free and over-capacity;
- ``allocations`` (:mod:`~projections.allocations`): consumers and their allocations;
- ``devices`` (:mod:`~projections.devices`): who holds each device now;
- ``migrations`` (:mod:`~projections.migrations`): every move's context, and the old and
  new devices of those in flight.

Their tables (:mod:`~projections.tables`, all ``proj_*``) live in the ledger's own database
unless another is named (:mod:`~projections.store`). The runner (:mod:`~projections.runner`)
reads the ledger once, in order, and writes each batch's rows together with every
projection's new position in one transaction (:mod:`~projections.tracking`), ending batches
only where commands ended: exactly once, across crashes and racing runners. It follows new
events through the event store's subscription (LISTEN/NOTIFY on PostgreSQL), polling as a
fallback. :class:`~projections.readmodels.ReadModels` is the entry point (rebuild, resume,
follow, wait for a position); :mod:`~projections.queries` answers an operator's questions;
:mod:`~projections.cli` is ``allocation-ledger projections`` and the scripts.
"""
