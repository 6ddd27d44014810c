"""MkDocs hook: the site's home page is the README, so the two never drift apart.

The README links into ``docs/`` as seen from the repository root (as GitHub and a clone show
it); on the site those pages sit beside the home page, so ``](docs/`` becomes ``](``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

README = Path(__file__).resolve().parents[1] / "README.md"


def on_files(files: Files, config: Any) -> Files:
    text = README.read_text(encoding="utf-8").replace("](docs/", "](")
    files.append(File.generated(config, "index.md", content=text))
    return files
