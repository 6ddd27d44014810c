"""The candidates benchmark works: its smoke run fills Placement 16 by rows in its own schema,
starts the ledger from that database with ``import-placement``, finds that the two servers
answer every query alike, prints the table and both targets, and draws them. Speed is not
asserted: the figures of a shared test machine mean nothing, the agreement and the report's
shape do."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from xml.etree import ElementTree

import pytest

from benchmarks.candidates import QUERIES, main
from tests.placement.test_import import placement_python

# slow: about 40 s (two servers and two clouds); .ci/run includes it
pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_the_smoke_run_agrees_with_placement_and_prints_both_targets(
        pg_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    placement_python()  # skips when Placement's venv is missing
    base = pg_url.split("?", 1)[0]

    code = main(["--smoke", "--pg-url", base, "--plot", str(tmp_path),
                 "--placement-db", f"placement_smoke_{uuid.uuid4().hex[:8]}"])

    out = capsys.readouterr().out
    assert code == 0, out
    assert "disagree" not in out
    for size in ("20", "60"):
        for query in QUERIES:
            assert re.search(rf"^\s+{size} {query}\s+[\d.]+ /\s+[\d.]+\s+[\d.]+ /", out, re.M), out
    for query in QUERIES:
        assert re.search(rf"target {query}: ledger [\d.]+x faster than Placement at 60 nodes",
                         out), out
    picture = ElementTree.parse(tmp_path / "candidates-latency.svg").getroot()
    assert picture.tag == "{http://www.w3.org/2000/svg}svg"
    text = "".join(picture.itertext())  # the picture's texts are kept as text
    assert "python -m benchmarks.candidates" in text and "ledger serve p99" in text
