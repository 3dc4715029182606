"""The built-in release's wheel: packed from the installed package, deterministic, and
a valid pure wheel (RECORD hashes, WHEEL, METADATA at the served version)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import rigway
from rigway.gateway.releases.wheel import pack_installed_rigway, pack_wheel, wheel_file_name

METADATA = "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 0.0.1\n\nVersion: in the body\n"


def _package(tmp_path: Path) -> Path:
    package = tmp_path / "src" / "demo_pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    (package / "sub" / "data.txt").write_text("data\n")
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"cache")
    (package / "stale.pyc").write_bytes(b"cache")
    (package / ".swap").write_text("editor")
    return package


def _pack(package: Path, out_dir: Path) -> Path:
    return pack_wheel(
        package,
        name="demo-pkg",
        version="2.0.0",
        metadata=METADATA,
        entry_points=None,
        out_dir=out_dir,
    )


def test_packed_wheel_holds_the_package_without_caches(tmp_path: Path) -> None:
    wheel = _pack(_package(tmp_path), tmp_path / "out")
    with zipfile.ZipFile(wheel) as archive:
        names = sorted(archive.namelist())
    assert names == [
        "demo_pkg-2.0.0.dist-info/METADATA",
        "demo_pkg-2.0.0.dist-info/RECORD",
        "demo_pkg-2.0.0.dist-info/WHEEL",
        "demo_pkg/__init__.py",
        "demo_pkg/sub/data.txt",
    ]
    assert wheel.name == wheel_file_name("demo-pkg", "2.0.0") == "demo_pkg-2.0.0-py3-none-any.whl"


def test_packed_metadata_names_the_served_version(tmp_path: Path) -> None:
    wheel = _pack(_package(tmp_path), tmp_path / "out")
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read("demo_pkg-2.0.0.dist-info/METADATA").decode()
    assert metadata.splitlines()[2] == "Version: 2.0.0"
    assert "Version: in the body" in metadata


def test_record_hashes_match_every_file(tmp_path: Path) -> None:
    wheel = _pack(_package(tmp_path), tmp_path / "out")
    with zipfile.ZipFile(wheel) as archive:
        record = archive.read("demo_pkg-2.0.0.dist-info/RECORD").decode().splitlines()
        for line in record:
            name, digest, size = line.rsplit(",", 2)
            if name.endswith("/RECORD"):
                assert (digest, size) == ("", "")
                continue
            data = archive.read(name)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == "sha256=" + expected.decode()
            assert int(size) == len(data)
    assert len(record) == 5


def test_packing_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    package = _package(tmp_path)
    first = _pack(package, tmp_path / "one").read_bytes()
    (package / "__init__.py").touch()  # a new modification time changes nothing
    assert _pack(package, tmp_path / "two").read_bytes() == first


def test_installed_rigway_packs_at_its_own_version(tmp_path: Path) -> None:
    wheel = pack_installed_rigway(tmp_path)
    version = rigway.__version__
    assert wheel.name == f"rigway-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        wheel_info = archive.read(f"rigway-{version}.dist-info/WHEEL").decode()
    assert {"rigway/__init__.py", "rigway/cli/main.py", "rigway/agent/runner.py"} <= names
    assert "Root-Is-Purelib: true" in wheel_info
    assert not any("__pycache__" in name for name in names)
