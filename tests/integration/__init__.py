"""Integration tests: real writers racing on PostgreSQL (threads and separate processes)."""
