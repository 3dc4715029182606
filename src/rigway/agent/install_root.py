"""Side-by-side agent installations, and the pointer the launcher starts.

A running installation is never changed: on Windows its loaded files cannot be
overwritten, and an upgrade in place that fails half-way leaves nothing that starts. So
each release goes into a folder of its own and a small pointer says which one runs:

    <install root>/
      versions/<version>/   one release, its wheel unpacked (a `sys.path` entry); never
                            changed once its folder has its final name
      current.json          {"version": "1.5.0" | null, "previous": ..., "trial": bool}
      bad-versions          versions that failed their trial, one a line; never retried
      staging/              the updater's verified downloads
      health                written by a started agent once its link is up (its pid)

`version: null` is the base installation: the one the launcher itself runs from. A new
version starts on trial; the launcher commits it once its health marker appears, or
rolls back to `previous` (and records it as bad) when it exits or times out first.

The pointer, the bad list and the health marker are written whole or not at all
(`write_atomically`). Wheels are unpacked, not installed with pip: a rig need not have
pip (an embedded Windows Python has none), it must work offline, and a pure wheel's
install into a folder is its unpacking (PEP 427). Dependencies are the base
installation's: a release that needs new ones fails its trial and is rolled back.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from rigway.agent.updater import write_atomically
from rigway.releases.manifest import ManifestError, compare_versions, parse_version

__all__ = [
    "MAX_INSTALLED_BYTES",
    "RESTART_EXIT_CODE",
    "InstallRoot",
    "Pointer",
    "ReleaseInstallError",
    "read_health_marker",
    "write_health_marker",
]

_log = logging.getLogger(__name__)

# The agent asks its launcher to start the current version again (a new one is on trial).
# EX_TEMPFAIL: distinct from the CLI's own codes (0-8) and from a crash's 1.
RESTART_EXIT_CODE = 75
MAX_INSTALLED_BYTES = 1024 * 1024 * 1024
_PACKAGE = "rigway"
_DATA_TO_ROOT = ("purelib", "platlib")
_UNSAFE_PART = re.compile(r"^\.\.?$|[:\\]")


class ReleaseInstallError(Exception):
    """A release could not be installed; str(exc) says why. Nothing was left behind."""


@dataclass(frozen=True, slots=True)
class Pointer:
    version: str | None = None  # None: the base installation
    previous: str | None = None  # what a failed trial rolls back to
    is_trial: bool = False


class InstallRoot:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.versions_dir = root / "versions"
        self.staging_dir = root / "staging"
        self.health_file = root / "health"
        self._pointer_file = root / "current.json"
        self._bad_file = root / "bad-versions"

    def version_dir(self, version: str) -> Path:
        parse_version(version)  # a dotted number: never a path of its own
        return self.versions_dir / version

    def is_installed(self, version: str) -> bool:
        return self.version_dir(version).is_dir()

    def pointer(self) -> Pointer:
        """The pointer; the base installation when there is none or it is damaged."""
        try:
            data = json.loads(self._pointer_file.read_bytes())
            pointer = Pointer(data["version"], data["previous"], data["trial"])
        except FileNotFoundError:
            return Pointer()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            _log.error("%s is damaged (%s): running the base installation", self._pointer_file, exc)
            return Pointer()
        if not _is_version_or_none(pointer.version) or not _is_version_or_none(pointer.previous):
            _log.error("%s names no version: running the base installation", self._pointer_file)
            return Pointer()
        return Pointer(pointer.version, pointer.previous, pointer.is_trial is True)

    def bad_versions(self) -> frozenset[str]:
        try:
            return frozenset(self._bad_file.read_text(encoding="ascii").split())
        except FileNotFoundError:
            return frozenset()

    def install_wheel(self, wheel: Path, version: str) -> Path:
        """Unpack the (verified) wheel of `version` beside the others; its folder.

        A version installed before is not unpacked again: releases do not change.
        """
        target = self.version_dir(version)
        if target.is_dir():
            return target
        self.versions_dir.mkdir(parents=True, exist_ok=True)
        temp = Path(tempfile.mkdtemp(dir=self.versions_dir, prefix=".installing-"))
        try:
            _unpack_pure_wheel(wheel, temp, version)
            os.replace(temp, target)
        finally:
            shutil.rmtree(temp, ignore_errors=True)
        return target

    def begin_trial(self, version: str) -> None:
        """Point at the installed `version`, on trial; the running one becomes `previous`."""
        if not self.is_installed(version):
            raise ReleaseInstallError(f"version {version} is not installed")
        current = self.pointer()
        # A trial not yet committed is no version to come back to.
        previous = current.previous if current.is_trial else current.version
        self._write_pointer(Pointer(version, previous, is_trial=True))

    def commit_trial(self, version: str) -> bool:
        """The trial of `version` passed; False when the pointer names something else."""
        current = self.pointer()
        if not current.is_trial or current.version != version:
            return False
        self._write_pointer(Pointer(version, current.previous, is_trial=False))
        return True

    def roll_back(self, version: str) -> bool:
        """The trial of `version` failed: record it as bad and point at `previous`.
        False when the pointer names something else (nothing changed)."""
        current = self.pointer()
        if not current.is_trial or current.version != version:
            return False
        self._mark_bad(version)
        self._write_pointer(Pointer(current.previous, None, is_trial=False))
        return True

    def forget_missing(self) -> Pointer:
        """The pointer, reset to the base installation when its version's folder is gone."""
        pointer = self.pointer()
        if pointer.version is None or self.is_installed(pointer.version):
            return pointer
        _log.error("version %s is not installed: starting the base installation", pointer.version)
        self._write_pointer(Pointer())
        return Pointer()

    def prune(self) -> None:
        """Remove failed unpackings, bad versions, and versions older than the current
        one but the previous. Call it while no agent runs from this root: an unpacking
        under way looks like a failed one. A newer version not yet on trial stays."""
        if not self.versions_dir.is_dir():
            return
        pointer = self.pointer()
        keep = {pointer.version, pointer.previous}
        bad = self.bad_versions()
        for entry in self.versions_dir.iterdir():
            if entry.name in keep or entry.is_symlink() or not entry.is_dir():
                continue
            if _is_prunable(entry.name, pointer.version, bad):
                shutil.rmtree(entry, ignore_errors=True)

    def _mark_bad(self, version: str) -> None:
        bad = sorted(self.bad_versions() | {version})
        write_atomically(self._bad_file, "".join(v + "\n" for v in bad).encode("ascii"))

    def _write_pointer(self, pointer: Pointer) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        data = {"version": pointer.version, "previous": pointer.previous, "trial": pointer.is_trial}
        write_atomically(self._pointer_file, json.dumps(data, sort_keys=True).encode("ascii"))


def write_health_marker(path: Path, pid: int) -> None:
    """Tell the launcher that the agent in process `pid` is up."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, str(pid).encode("ascii"))


def read_health_marker(path: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(path.read_text(encoding="ascii"))
    return None


def _is_prunable(name: str, current: str | None, bad: frozenset[str]) -> bool:
    if name in bad or not _is_version_or_none(name):
        return True
    return current is not None and compare_versions(name, current) < 0


def _is_version_or_none(value: object) -> bool:
    if value is None:
        return True
    if not isinstance(value, str):
        return False
    try:
        parse_version(value)
    except ManifestError:
        return False
    return True


def _unpack_pure_wheel(wheel: Path, dest: Path, version: str) -> None:
    try:
        with zipfile.ZipFile(wheel) as archive:
            dist_info = _check_wheel(archive, version)
            members = [(info, _install_path(info, dist_info)) for info in archive.infolist()]
            for info, relative in members:
                if relative is None or info.is_dir():
                    continue
                path = dest.joinpath(*relative.parts)
                path.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as source, path.open("wb") as target:
                    shutil.copyfileobj(source, target, 1 << 20)
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError, EOFError) as exc:
        raise ReleaseInstallError(f"cannot unpack {wheel.name}: {exc}") from exc


def _check_wheel(archive: zipfile.ZipFile, version: str) -> str:
    """The wheel's `.dist-info` folder, once it is known to be a pure rigway `version`."""
    folders = {name.split("/", 1)[0] for name in archive.namelist()}
    dist_infos = [f for f in folders if f.endswith(".dist-info")]
    if len(dist_infos) != 1:
        raise ReleaseInstallError("the wheel does not have exactly one .dist-info folder")
    dist_info = dist_infos[0]
    wheel_info = _headers(archive.read(f"{dist_info}/WHEEL").decode("utf-8"))
    if wheel_info.get("root-is-purelib", "").lower() != "true":
        raise ReleaseInstallError("the wheel is not pure Python (Root-Is-Purelib is not true)")
    metadata = _headers(archive.read(f"{dist_info}/METADATA").decode("utf-8"))
    name = re.sub(r"[-_.]+", "-", metadata.get("name", "")).lower()
    if name != _PACKAGE:
        raise ReleaseInstallError(f"the wheel is {name!r}, not {_PACKAGE}")
    if not _same_version(metadata.get("version", ""), version):
        raise ReleaseInstallError(
            f"the wheel is version {metadata.get('version')!r}, not {version}"
        )
    if f"{_PACKAGE}/__init__.py" not in archive.namelist():
        raise ReleaseInstallError(f"the wheel has no {_PACKAGE} package")
    total = sum(info.file_size for info in archive.infolist())
    if total > MAX_INSTALLED_BYTES:
        raise ReleaseInstallError(f"the wheel unpacks to {total} bytes, over {MAX_INSTALLED_BYTES}")
    return dist_info


def _install_path(info: zipfile.ZipInfo, dist_info: str) -> PurePosixPath | None:
    """Where a member goes under the version folder; None for one not installed."""
    name = info.filename
    parts = PurePosixPath(name).parts
    if name.startswith("/") or not parts or any(_UNSAFE_PART.search(p) for p in parts):
        raise ReleaseInstallError(f"the wheel holds an unsafe path {name!r}")
    if stat.S_ISLNK(info.external_attr >> 16):
        raise ReleaseInstallError(f"the wheel holds a symlink {name!r}")
    data_folder = dist_info.removesuffix(".dist-info") + ".data"
    if parts[0] != data_folder:
        return PurePosixPath(*parts)
    # `<name>.data/purelib/…` belongs at the root; scripts and headers are not needed to
    # run `python -m rigway.cli.main`.
    if len(parts) > 2 and parts[1] in _DATA_TO_ROOT:
        return PurePosixPath(*parts[2:])
    return None


def _headers(text: str) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in text.splitlines():
        if line == "":
            break  # the body (a long description) follows the first blank line
        key, sep, value = line.partition(":")
        if sep and not line.startswith((" ", "\t")):
            headers.setdefault(key.strip().lower(), value.strip())
    return headers


def _same_version(left: str, right: str) -> bool:
    try:
        return compare_versions(left, right) == 0
    except ManifestError:
        return False
