"""The read side: projections of the ledger into SQL tables."""
