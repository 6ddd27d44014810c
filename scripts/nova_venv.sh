#!/usr/bin/env bash
# Install OpenStack Nova into .venv-nova, apart from the ledger's own .venv (their pins
# conflict). tests/nova/ drives the ledger's server with Nova's own SchedulerReportClient
# from it; without it they are skipped with that reason.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv-nova/bin/python ] || "$PYTHON" -m venv .venv-nova
.venv-nova/bin/python -c "import nova.scheduler.client.report" 2>/dev/null || \
  .venv-nova/bin/python -m pip install --quiet --disable-pip-version-check "nova==31.3.1"
.venv-nova/bin/python -c "import nova.scheduler.client.report; print('nova venv ready')"
