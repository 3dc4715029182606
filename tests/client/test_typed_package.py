"""The installed SDK is typed for its users: `py.typed` ships in the package, so a user's
`mypy --strict` reads the SDK's own annotations (PEP 561) instead of treating it as Any."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]

USER_SCRIPT = """\
from rigway.client import Rigway

with Rigway() as client, client.sessions.create() as session:
    shot = session.screenshot()
    reveal_type(shot.width)
    reveal_type(client.sessions.end)
    width: str = shot.width
"""


def test_the_package_carries_the_py_typed_marker() -> None:
    assert (resources.files("rigway") / "py.typed").is_file()


def test_the_wheel_is_built_from_the_whole_package_directory() -> None:
    # Hatch ships every file of the listed package directories, the marker among them.
    config = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())
    assert config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["src/rigway"]
    assert (REPOSITORY / "src" / "rigway" / "py.typed").is_file()


def test_mypy_strict_on_a_user_script_sees_the_sdk_types(tmp_path: Path) -> None:
    script = tmp_path / "drive.py"
    script.write_text(USER_SCRIPT)
    mypy = Path(sys.executable).with_name("mypy")
    if not mypy.exists():
        pytest.fail(f"mypy is not installed beside {sys.executable} (the dev extra has it)")
    # Run from the script's directory with no config, as a user would: the SDK is found
    # where it is installed, not as this repository's source.
    result = subprocess.run(
        [str(mypy), "--strict", "--config-file=", "--no-incremental", script.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    out = result.stdout
    assert "import-untyped" not in out, out
    assert 'drive.py:5: note: Revealed type is "int"' in out, out
    assert "-> rigway.client.models.Session" in out, out
    assert (
        'Incompatible types in assignment (expression has type "int", variable has type "str")'
        in out
    ), out
    assert result.returncode == 1, out
