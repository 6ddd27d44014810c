#!/usr/bin/env bash
# Set up a virtualenv in .venv (once), then run the linters and the whole test suite.
# PostgreSQL tests use $LEDGER_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/ledger_test)
# and skip with a reason when it is unreachable, unless LEDGER_REQUIRE_POSTGRES=1.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
.venv/bin/ruff check .
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
