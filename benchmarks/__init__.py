"""The benchmarks: figures of the ledger measured beside the raw database, in the same run.

A repository package, like ``tests/``: not part of the wheel, and nothing in ``src/`` or
``projections/`` imports it (``tests/packaging/test_import_graph.py`` checks). Each command
is a module run from the repository root, which ``python -m`` puts on ``sys.path``:

    python -m benchmarks [--quick] [--stores sqlite,postgresql]   # claims, moves, batches,
                                                                  # the cost of history
    python -m benchmarks.audit           # audit replay throughput
    python -m benchmarks.projections     # rebuild throughput of the projections
    python -m benchmarks.replay_memory   # peak memory of replay, by ledger size
    python -m benchmarks.in_flight       # Ledger.migrations_in_flight() on a long history
    python -m benchmarks.hosts           # claims on a cloud of many hosts beside ten
    python -m benchmarks.http            # claims over HTTP beside the in-process API
    python -m benchmarks.set_devices     # set_devices with many ids

The main benchmark's entry point for code is :func:`benchmarks.runner.run`; the random
ledger many tests replay is :func:`benchmarks.random_ledger.populate`.
"""
