#!/usr/bin/env bash
# Install OpenStack Placement 16 into .venv-placement, apart from the ledger's own .venv
# (their pins conflict). The import tests run Placement's own migrations and API from it
# (tests/placement/); without it they are skipped with that reason.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv-placement/bin/python ] || "$PYTHON" -m venv .venv-placement
.venv-placement/bin/python -c "import placement, pymysql" 2>/dev/null || \
  .venv-placement/bin/python -m pip install --quiet --disable-pip-version-check \
    "openstack-placement==16.0.0" "pymysql>=1.1,<2"
.venv-placement/bin/python -c "import placement, pymysql; print('placement venv ready')"
