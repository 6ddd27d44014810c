"""Unit tests: pure rules and input validation, no store."""
