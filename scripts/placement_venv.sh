#!/usr/bin/env bash
# Install OpenStack Placement 16 into .venv-placement, apart from the ledger's own .venv
# (their pins conflict). The import tests run Placement's own migrations and API from it
# (tests/placement/); the gabbit tests (tests/gabbits/) run Placement's own functional API
# tests, the gabbi YAML files shipped in the package, from it with gabbi against a real
# `allocation-ledger serve`. Without it both are skipped with that reason.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
# gabbi: Placement 16's test requirement is gabbi>=1.35.0; its own fixture module is
# written for gabbi 4 (setup_app called while the tests are built), so the 4 series.
PACKAGES=("openstack-placement==16.0.0" "pymysql>=1.1,<2" "gabbi>=4,<5")
[ -x .venv-placement/bin/python ] || "$PYTHON" -m venv .venv-placement
.venv-placement/bin/python -c "import placement, pymysql, gabbi" 2>/dev/null || \
  .venv-placement/bin/python -m pip install --quiet --disable-pip-version-check "${PACKAGES[@]}"
.venv-placement/bin/python -c "import placement, pymysql, gabbi; print('placement venv ready')"
