"""Starting a ledger from an existing OpenStack Placement database: :mod:`.source` reads
it, :mod:`.importer` writes it into a new ledger as ordinary commands and checks the
result against the source."""
