"""The command handlers, one module per concept: each handler loads through the unit of
work it is given and lets the domain decide; committing is the caller's
(:mod:`allocation_ledger.application.command_ids`)."""
