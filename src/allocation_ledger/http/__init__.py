"""A Placement-compatible HTTP API over the ledger (the ``http`` extra: Starlette, uvicorn).

:func:`allocation_ledger.http.app.create_app` builds the ASGI application;
``allocation-ledger serve`` runs it under uvicorn. One module per resource group, the
microversion rules in :mod:`.microversion`, the ledger-error -> status/code table in
:mod:`.errors`.
"""
