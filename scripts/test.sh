#!/usr/bin/env bash
# Set up a virtualenv in .venv (once), then run the linters and the test suite, spread over
# every core (pytest-xdist, `-n auto`; pass `-n 0` for one process, or your own `-n N`).
# The long trials marked `slow` (many-process races, kill -9 loops, failovers, the large
# random differential runs) are left out; `--slow` or LEDGER_TEST_SLOW=1 includes them, as
# .ci/run does. OpenStack Placement 16 is installed into .venv-placement (once) for the
# import tests and Placement's own API tests; without it those skip and say why.
# PostgreSQL tests use $LEDGER_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/ledger_test)
# and skip with a reason when it is unreachable, unless LEDGER_REQUIRE_POSTGRES=1.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# pip 25.1 reads PEP 735 dependency groups (`--group dev`).
.venv/bin/python -m pip install --quiet --disable-pip-version-check 'pip>=25.1'
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[http,keystone]' --group dev
bash scripts/placement_venv.sh || echo "warning: Placement or gabbi not installed; the import tests (tests/placement) will be skipped"
.venv/bin/ruff check .
.venv/bin/mypy
spread=(-n auto)
for arg in "$@"; do
  case "$arg" in
    -n|-n*|--numprocesses|--numprocesses=*|no:xdist) spread=() ;;
  esac
done
exec .venv/bin/python -m pytest "${spread[@]}" "$@"
