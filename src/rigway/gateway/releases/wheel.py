"""A wheel of the running rigway, packed from its own files: the built-in agent release.

A gateway with no release configured offers agents the code it runs itself. Building
that wheel with `pip wheel` or `uv build` needs the source tree and, with build
isolation, the network to fetch the build backend; a gateway installed from a wheel has
neither. A pure-Python wheel is a zip of the package plus a `.dist-info` folder (PEP 427),
so it is packed here from the installed package directory, offline, in well under a
second.

The result is deterministic: files in sorted order, fixed time stamps and modes, so the
same code packs to the same bytes (and the same sha256) on every start and every node.
Caches (`__pycache__`, `*.pyc`) and hidden files are left out; symlinks are not followed.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import os
import re
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import rigway

__all__ = ["pack_installed_rigway", "pack_wheel", "wheel_file_name"]

# The earliest time a zip entry can carry; any fixed value makes the bytes reproducible.
_FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_FILE_MODE = 0o644
_SKIPPED_SUFFIXES = (".pyc", ".pyo")
_VERSION_HEADER = re.compile(r"^Version:.*$", re.MULTILINE)


def wheel_file_name(name: str, version: str) -> str:
    return f"{_normalised(name)}-{version}-py3-none-any.whl"


def pack_installed_rigway(out_dir: Path) -> Path:
    """The running rigway as `out_dir/rigway-<version>-py3-none-any.whl`."""
    version = rigway.__version__
    try:
        distribution = importlib.metadata.distribution("rigway")
        metadata = distribution.read_text("METADATA")
        entry_points = distribution.read_text("entry_points.txt")
    except importlib.metadata.PackageNotFoundError:
        # Run from a source tree that was never installed: the package still works.
        metadata, entry_points = None, None
    return pack_wheel(
        Path(rigway.__file__).parent,
        name="rigway",
        version=version,
        metadata=metadata,
        entry_points=entry_points,
        out_dir=out_dir,
    )


def pack_wheel(
    package_dir: Path,
    *,
    name: str,
    version: str,
    metadata: str | None,
    entry_points: str | None,
    out_dir: Path,
) -> Path:
    """Pack `package_dir` (imported as its folder name) into a pure wheel in `out_dir`.

    `metadata` is the distribution's METADATA; its Version is set to `version` (an
    installed METADATA lags a version bumped in the source). Written to a temporary
    file and renamed, so a reader never sees half a wheel.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / wheel_file_name(name, version)
    dist_info = f"{_normalised(name)}-{version}.dist-info"
    fd, temp_name = tempfile.mkstemp(dir=out_dir, prefix=".pack-", suffix=".whl")
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w") as wheel:
            record: list[str] = []
            for arcname, data in _package_files(package_dir):
                _add(wheel, record, arcname, data)
            for file_name, text in _dist_info_files(name, version, metadata, entry_points):
                _add(wheel, record, f"{dist_info}/{file_name}", text.encode("utf-8"))
            record.append(f"{dist_info}/RECORD,,")
            _add(wheel, [], f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode("utf-8"))
        os.replace(temp_name, target)
    finally:
        if os.path.exists(temp_name):
            os.unlink(temp_name)
    return target


def _package_files(package_dir: Path) -> Iterator[tuple[str, bytes]]:
    found: list[tuple[str, Path]] = []
    for folder, dir_names, file_names in os.walk(package_dir):
        dir_names[:] = [d for d in dir_names if d != "__pycache__" and not d.startswith(".")]
        for file_name in file_names:
            path = Path(folder) / file_name
            if file_name.startswith(".") or file_name.endswith(_SKIPPED_SUFFIXES):
                continue
            if path.is_symlink() or not path.is_file():
                continue
            relative = path.relative_to(package_dir.parent).as_posix()
            found.append((relative, path))
    for relative, path in sorted(found):
        yield relative, path.read_bytes()


def _dist_info_files(
    name: str, version: str, metadata: str | None, entry_points: str | None
) -> Iterator[tuple[str, str]]:
    if metadata is None:
        metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    else:
        metadata = _VERSION_HEADER.sub(f"Version: {version}", metadata, count=1)
    yield "METADATA", metadata
    yield (
        "WHEEL",
        ("Wheel-Version: 1.0\nGenerator: rigway\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    )
    if entry_points is not None:
        yield "entry_points.txt", entry_points


def _add(wheel: zipfile.ZipFile, record: list[str], arcname: str, data: bytes) -> None:
    info = zipfile.ZipInfo(arcname, date_time=_FIXED_ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100000 | _FILE_MODE) << 16  # a regular file, rw-r--r--
    wheel.writestr(info, data)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{arcname},sha256={digest},{len(data)}")


def _normalised(name: str) -> str:
    # PEP 427: the distribution name in file names has runs of -_. as one underscore.
    return re.sub(r"[-_.]+", "_", name).lower()
