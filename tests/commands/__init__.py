"""Command ids: retries return the original outcome, reused ids are refused, lost replies,
killed writers and a PostgreSQL failover never misreport or double-apply a command."""
