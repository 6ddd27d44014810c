"""The documentation's Python samples run: every ```python block of README.md and docs/*.md
marked ``<!-- runnable -->`` on the line before its fence runs, the blocks of one page in
order in one namespace (a later sample may use what an earlier one made), in an empty
folder with ``LEDGER_URL`` set to a fresh SQLite file, so ``open_ledger()`` with no
argument opens it. A sample that raises fails its page's test, naming the block's line."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = "<!-- runnable -->"
FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[ \t]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$",
                   re.MULTILINE | re.DOTALL)


def runnable_samples(text: str) -> list[tuple[int, str]]:
    """(line number, code) of each ```python block that follows the marker line."""
    found = []
    for match in FENCE.finditer(text):
        lines_before = text[:match.start()].split("\n")   # ends with "" (the fence's line)
        if len(lines_before) >= 2 and lines_before[-2].strip() == MARKER:
            line = text.count("\n", 0, match.start("code")) + 1
            found.append((line, textwrap.dedent(match.group("code"))))
    return found


PAGES_WITH_SAMPLES = [page for page in PAGES if runnable_samples(page.read_text())]


def test_the_readme_and_the_api_page_have_runnable_samples() -> None:
    names = {page.name for page in PAGES_WITH_SAMPLES}
    assert {"README.md", "api.md"} <= names, names


def test_a_marked_block_is_found_and_an_unmarked_one_is_not() -> None:
    text = ("x\n<!-- runnable -->\n```python\nA = 1\n```\n\n```python\nB = 2\n```\n"
            "<!-- runnable -->\n\n```python\nC = 3\n```\n")
    assert runnable_samples(text) == [(4, "A = 1\n")]


@pytest.mark.parametrize("page", PAGES_WITH_SAMPLES, ids=lambda page: page.name)
def test_the_samples_of_the_page_run(page: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LEDGER_URL", f"sqlite:///{tmp_path / 'ledger.db'}")
    namespace: dict[str, object] = {"__name__": f"sample_{page.stem}"}
    for line, code in runnable_samples(page.read_text()):
        try:
            exec(compile(code, f"{page.name}:{line}", "exec"), namespace)
        except Exception as error:
            pytest.fail(f"{page.relative_to(ROOT)}, the sample at line {line}: "
                        f"{type(error).__name__}: {error}")
    for value in namespace.values():   # close what the samples opened
        close = getattr(value, "close", None)
        if type(value).__name__ == "Ledger" and callable(close):
            close()
