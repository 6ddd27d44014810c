#!/usr/bin/env bash
# Build the wheel and try it as a user would: install it into a fresh virtualenv, check that
# it installs only the `allocation_ledger` package (with its `py.typed`, without the
# benchmarks: they live in the repository's benchmarks/), import it, run the demo from an
# empty directory, and type-check a user's script against it with mypy --strict.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

"$PYTHON" -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir "$WORK/dist" .
WHEEL=$(ls "$WORK"/dist/allocation_ledger-*.whl)
echo "built $(basename "$WHEEL")"

# Top-level names in the wheel: only the package and its metadata.
"$PYTHON" - "$WHEEL" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
top = sorted({n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")})
assert top == ["allocation_ledger"], f"the wheel installs top-level names {top}"
assert "allocation_ledger/py.typed" in names, "the wheel does not ship py.typed"
assert any(n.startswith("allocation_ledger/projections/") for n in names), "no read side"
benches = [n for n in names if n.startswith("allocation_ledger/bench/")
           or n == "allocation_ledger/projections/bench.py"]
assert not benches, f"the wheel ships benchmark code: {benches}"
print("top-level names:", ", ".join(top), "(py.typed shipped, no benchmark code)")
# The metadata a package index shows: the README as the description, classifiers, project
# URLs, and no development tools published as an extra (they are a dependency group).
meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
lines = zipfile.ZipFile(sys.argv[1]).read(meta).decode().split("\n")
fields = [line.split(": ", 1) for line in lines if ": " in line and not line.startswith(" ")]
extras = sorted(v for k, v in fields if k == "Provides-Extra")
assert extras == ["http", "keystone", "metrics", "placement"], f"the wheel publishes extras {extras}"
assert any(k == "Classifier" for k, _ in fields), "no classifiers"
assert {"Homepage", "Documentation", "Source"} <= {
    v.split(",")[0] for k, v in fields if k == "Project-URL"}, "no project URLs"
assert any(k == "Description-Content-Type" and v == "text/markdown" for k, v in fields)
print("metadata: extras", ", ".join(extras), "; classifiers and project URLs present")
PY

"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$WHEEL" mypy
cd "$WORK"
"$WORK/venv/bin/python" -c "import allocation_ledger, allocation_ledger.projections.readmodels; print('imports from', allocation_ledger.__file__)"
"$WORK/venv/bin/allocation-ledger" demo > demo.out
tail -n 3 demo.out
cp "$ROOT/tests/packaging/user_script.py" user_script.py
"$WORK/venv/bin/python" -m mypy --strict user_script.py
"$WORK/venv/bin/python" user_script.py > /dev/null
echo "wheel check passed"
