"""The audit: replay the ledger, check every invariant, answer point-in-time questions.

- :func:`~allocation_ledger.audit.run.audit` replays the ledger through the domain's own
  appliers and checks docs/guarantees.md §5 at every position, collecting :class:`Finding` records.
- :mod:`~allocation_ledger.audit.pointintime`: a provider, consumer, migration or every host
  as of a ledger position or a moment.
- :mod:`~allocation_ledger.audit.history`: every event of a stream with who, why and what
  changed; the ledger as plain records.

Nothing here writes to the ledger.
"""

from allocation_ledger.audit.findings import Finding
from allocation_ledger.audit.run import AuditReport, audit

__all__ = ["AuditReport", "Finding", "audit"]
