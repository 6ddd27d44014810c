"""The service layer: the :class:`Ledger` API (load, decide, save) and its inputs and views."""
