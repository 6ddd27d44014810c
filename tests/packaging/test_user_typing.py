"""``mypy --strict`` on a user's script, from outside the repository: the installed package
must ship its types (``py.typed``), and they must be precise enough to catch a misuse."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def mypy(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent",
         str(script)],
        cwd=cwd, capture_output=True, text=True, timeout=600, check=False,
    )


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory outside the repository (no pyproject, no mypy_path to the sources)."""
    return tmp_path_factory.mktemp("user")


def test_the_user_script_type_checks(outside: Path) -> None:
    script = outside / "good.py"
    shutil.copy(HERE / "user_script.py", script)
    result = mypy(script, outside)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("good", "bad", "said"), [
    # a wrong type: mypy sees the package's annotations, not ``Any``
    ("generation: int | None = view.generation", "generation: str = view.generation",
     "Incompatible types in assignment"),
    # a command's ``request`` and ``command_id`` are typed keywords (``**options`` of a
    # ``TypedDict``): a name that is neither is an error, as a missing parameter is
    ('request={"actor": "user-script"}', 'requests={"actor": "user-script"}',
     'Unexpected keyword argument "requests"'),
], ids=["wrong-type", "misspelt-option"])
def test_a_misuse_is_caught(outside: Path, good: str, bad: str, said: str) -> None:
    """The user's script with one mistake: mypy reports it."""
    script = outside / "bad.py"
    source = (HERE / "user_script.py").read_text()
    assert good in source
    script.write_text(source.replace(good, bad))
    result = mypy(script, outside)
    assert result.returncode == 1, result.stdout + result.stderr
    assert said in result.stdout
