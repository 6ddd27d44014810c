"""The benchmark: claims, moves, batched claims and the cost of history, each measured
beside the raw database floor (one plain INSERT per transaction) in the same run.

Run it with ``allocation-ledger bench`` or ``scripts/bench.py``; :func:`runner.run` is the
entry point for code. Nothing here is imported by the ledger itself.
"""
