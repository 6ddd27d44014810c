#!/usr/bin/env bash
# Set up a virtualenv in .venv (once), then run the demo on the embedded SQLite default:
# register hosts, claim, move an instance, and show usage. The ledger file is ./ledger.db.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
exec .venv/bin/allocation-ledger demo "$@"
