"""Run one of Placement's gabbit files against a running server; print each test's outcome.

    .venv-placement/bin/python tests/gabbits/runner.py --server 127.0.0.1:PORT FILE.yaml
    .venv-placement/bin/python tests/gabbits/runner.py --list

Runs inside ``.venv-placement`` (openstack-placement 16.0.0 and gabbi; the ledger's pins
conflict with Placement's), with no import of the ledger. The gabbit files are the ones
shipped in the installed package (``placement/tests/functional/gabbits``); the fixtures
they name are this folder's ``data_fixtures.py``, which rebuild Placement's data fixtures by
HTTP calls to the server.

The tests of a file run in order, as gabbi runs them (each may read the previous answer);
a failure does not stop the ones after it. The output is one JSON document on stdout:
``{"file", "tests": [{"name", "outcome", "method", "url", "path", "detail"}]}`` (``url`` as
written in the file, ``path`` as sent, when it was), ``outcome`` one of
``passed``, ``failed``, ``xfail`` (marked ``xfail`` in the file and failed: a pass for
Placement too), ``skipped`` and ``cannot-run`` (a fixture failed: ``detail`` says why).
Names repeated in a file get `` #2``, `` #3``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import unittest
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gabbi import handlers, suitemaker, utils

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import data_fixtures  # noqa: E402  (this folder's module, found through the path above)

FIXTURE_FAILURE = "fixture failure"  # gabbi's skip reason after a fixture raised


def gabbits_dir() -> Path:
    """The gabbit files of the installed openstack-placement package."""
    spec = importlib.util.find_spec("placement")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("openstack-placement is not installed in this interpreter")
    return Path(next(iter(spec.submodule_search_locations))) / "tests/functional/gabbits"


class Outcomes(unittest.TestResult):
    """Each gabbi test's last outcome, with the request and the first lines of why."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, dict[str, Any]] = {}
        self.fixture_error = ""

    def note(self, test: Any, outcome: str, detail: str = "") -> None:
        data = getattr(test, "test_data", {})
        key = getattr(test, "ledger_key", str(test))
        self.found[key] = {"name": key, "outcome": outcome,
                           "method": data.get("method", ""), "url": data.get("url", ""),
                           "path": urlsplit(getattr(test, "url", "") or "").path,
                           "detail": detail}

    def addSuccess(self, test: Any) -> None:  # noqa: N802 (unittest's names)
        self.note(test, "passed")

    def addFailure(self, test: Any, err: Any) -> None:  # noqa: N802
        self.note(test, "failed", summary(err))

    def addError(self, test: Any, err: Any) -> None:  # noqa: N802
        self.fixture_error = summary(err)
        self.note(test, "failed", self.fixture_error)

    def addSkip(self, test: Any, reason: str) -> None:  # noqa: N802
        if reason == FIXTURE_FAILURE:
            self.note(test, "cannot-run", self.fixture_error)
        else:
            self.note(test, "skipped", reason)

    def addExpectedFailure(self, test: Any, err: Any) -> None:  # noqa: N802
        self.note(test, "xfail", summary(err))

    def addUnexpectedSuccess(self, test: Any) -> None:  # noqa: N802
        self.note(test, "failed", "unexpected success (marked xfail)")


def summary(err: Any) -> str:
    """The exception's type and the first lines of its message, at most 900 characters."""
    kind, value, _ = err
    text = f"{kind.__name__}: {value}".strip()
    return "\n".join(text.splitlines()[:12])[:900]


def build(path: Path, host: str, port: int) -> Any:
    """The file's gabbi suite against host:port, its tests tagged with unique keys."""
    loader = unittest.TestLoader()
    suite_dict = utils.load_yaml(yaml_file=str(path), safe=True)
    handler_objects = [handler() for handler in handlers.RESPONSE_HANDLERS]
    suite = suitemaker.test_suite_from_dict(
        loader, path.stem, suite_dict, str(path.parent), host, port, data_fixtures, None,
        handlers=handler_objects, test_loader_name="gabbits")
    seen: dict[str, int] = {}
    for test in suite:
        name = test.test_data["name"]
        seen[name] = seen.get(name, 0) + 1
        test.ledger_key = name if seen[name] == 1 else f"{name} #{seen[name]}"
    return suite


def run(path: Path, server: str) -> dict[str, Any]:
    """Run every test of the file in order; the JSON document described above."""
    host, _, port = server.rpartition(":")
    os.environ[data_fixtures.SERVER_ENV] = server
    suite = build(path, host, int(port))
    keys = [test.ledger_key for test in suite]  # before the run, which drops the tests
    result = Outcomes()
    with contextlib.redirect_stdout(sys.stderr):
        suite.run(result)
    missing = {"outcome": "cannot-run", "detail": "not run", "method": "", "url": "",
               "path": ""}
    return {"file": path.name,
            "tests": [result.found.get(key, {"name": key, **missing}) for key in keys]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", nargs="?", help="a gabbit file name, e.g. usage.yaml")
    parser.add_argument("--server", help="HOST:PORT of the running server")
    parser.add_argument("--list", action="store_true", help="print the gabbit file names")
    args = parser.parse_args(argv)
    folder = gabbits_dir()
    if args.list:
        print(json.dumps(sorted(p.name for p in folder.glob("*.yaml"))))
        return 0
    if not args.file or not args.server:
        parser.error("FILE and --server are required (or --list)")
    print(json.dumps(run(folder / args.file, args.server)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
