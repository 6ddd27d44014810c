"""Hostile and careless input: the API, the read side and the command line under bad values."""
