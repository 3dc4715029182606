"""Side-by-side installs: wheels unpacked into a folder per version (unsafe or foreign
wheels refused, nothing left behind), and the pointer's trial, commit and rollback."""

from __future__ import annotations

import shutil
import stat
import zipfile
from pathlib import Path

import pytest

from rigway.agent.install_root import (
    InstallRoot,
    Pointer,
    ReleaseInstallError,
    read_health_marker,
    write_health_marker,
)
from tests.support.tiny_release import HEALTHY, build_wheel


def _installed(tmp_path: Path, *versions: str) -> InstallRoot:
    installs = InstallRoot(tmp_path / "root")
    for version in versions:
        installs.install_wheel(build_wheel(tmp_path / "wheels", version, HEALTHY), version)
    return installs


def _commit(installs: InstallRoot, version: str) -> None:
    installs.begin_trial(version)
    assert installs.commit_trial(version)


def _zip(path: Path, members: dict[str, bytes], *, symlink: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        if symlink is not None:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return path


def _wheel_members(version: str = "2.0.0", *, purelib: str = "true") -> dict[str, bytes]:
    info = f"rigway-{version}.dist-info"
    return {
        "rigway/__init__.py": b"",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: rigway\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: {purelib}\n".encode(),
    }


def test_wheel_is_unpacked_into_its_own_version_folder(tmp_path: Path) -> None:
    installs = _installed(tmp_path, "2.0.0")
    folder = installs.version_dir("2.0.0")
    assert folder == tmp_path / "root" / "versions" / "2.0.0"
    assert (folder / "rigway" / "__init__.py").read_text() == "__version__ = '2.0.0'\n"
    assert (folder / "rigway-2.0.0.dist-info" / "METADATA").is_file()
    assert [p.name for p in installs.versions_dir.iterdir()] == ["2.0.0"]


def test_data_purelib_members_land_at_the_root(tmp_path: Path) -> None:
    members = _wheel_members() | {"rigway-2.0.0.data/purelib/extra.py": b"x = 1\n"}
    installs = InstallRoot(tmp_path / "root")
    installs.install_wheel(_zip(tmp_path / "w.whl", members), "2.0.0")
    assert (installs.version_dir("2.0.0") / "extra.py").read_text() == "x = 1\n"


@pytest.mark.parametrize(
    ("members", "symlink", "reason"),
    [
        (_wheel_members() | {"../escape.py": b""}, None, "unsafe path"),
        (_wheel_members() | {"rigway/..\\escape.py": b""}, None, "unsafe path"),
        (_wheel_members() | {"/etc/cron.d/x": b""}, None, "unsafe path"),
        (_wheel_members(), "rigway/link", "symlink"),
        (_wheel_members(purelib="false"), None, "not pure Python"),
        (_wheel_members("2.0.1"), None, "version '2.0.1'"),
        ({k: v for k, v in _wheel_members().items() if "rigway/" not in k}, None, "no rigway"),
    ],
    ids=["dotdot", "backslash", "absolute", "symlink", "platlib", "version", "no-package"],
)
def test_refused_wheel_leaves_no_version_folder(
    tmp_path: Path, members: dict[str, bytes], symlink: str | None, reason: str
) -> None:
    installs = InstallRoot(tmp_path / "root")
    with pytest.raises(ReleaseInstallError, match=reason):
        installs.install_wheel(_zip(tmp_path / "w.whl", members, symlink=symlink), "2.0.0")
    assert list(installs.versions_dir.iterdir()) == []
    assert not (tmp_path / "escape.py").exists()


def test_a_wheel_of_another_project_is_refused(tmp_path: Path) -> None:
    members = _wheel_members()
    members["rigway-2.0.0.dist-info/METADATA"] = b"Name: evil\nVersion: 2.0.0\n"
    with pytest.raises(ReleaseInstallError, match="'evil'"):
        InstallRoot(tmp_path / "root").install_wheel(_zip(tmp_path / "w.whl", members), "2.0.0")


def test_a_file_that_is_no_zip_is_refused(tmp_path: Path) -> None:
    garbage = tmp_path / "w.whl"
    garbage.write_bytes(b"not a zip")
    with pytest.raises(ReleaseInstallError, match="cannot unpack"):
        InstallRoot(tmp_path / "root").install_wheel(garbage, "2.0.0")


def test_no_pointer_means_the_base_installation(tmp_path: Path) -> None:
    assert InstallRoot(tmp_path / "root").pointer() == Pointer()


def test_a_damaged_pointer_means_the_base_installation(tmp_path: Path) -> None:
    installs = InstallRoot(tmp_path)
    (tmp_path / "current.json").write_text('{"version": "../../x", "previous": null}')
    assert installs.pointer() == Pointer()


def test_trial_begins_with_the_running_version_as_previous(tmp_path: Path) -> None:
    installs = _installed(tmp_path, "2.0.0", "3.0.0")
    installs.begin_trial("2.0.0")
    assert installs.commit_trial("2.0.0")
    installs.begin_trial("3.0.0")
    assert installs.pointer() == Pointer("3.0.0", "2.0.0", is_trial=True)


def test_trial_over_an_uncommitted_trial_keeps_the_last_good_version(tmp_path: Path) -> None:
    installs = _installed(tmp_path, "2.0.0", "3.0.0")
    installs.begin_trial("2.0.0")
    installs.begin_trial("3.0.0")
    assert installs.pointer() == Pointer("3.0.0", None, is_trial=True)
    assert not installs.commit_trial("2.0.0")


def test_a_version_not_installed_cannot_go_on_trial(tmp_path: Path) -> None:
    with pytest.raises(ReleaseInstallError, match="not installed"):
        InstallRoot(tmp_path).begin_trial("2.0.0")


def test_rollback_points_back_and_records_the_bad_version(tmp_path: Path) -> None:
    installs = _installed(tmp_path, "2.0.0")
    installs.begin_trial("2.0.0")
    assert installs.roll_back("2.0.0")
    assert installs.pointer() == Pointer()
    assert installs.bad_versions() == {"2.0.0"}


def test_rollback_of_a_committed_version_changes_nothing(tmp_path: Path) -> None:
    installs = _installed(tmp_path, "2.0.0")
    installs.begin_trial("2.0.0")
    installs.commit_trial("2.0.0")
    assert not installs.roll_back("2.0.0")
    assert installs.pointer() == Pointer("2.0.0", None)
    assert installs.bad_versions() == frozenset()


def test_prune_removes_older_versions_but_the_previous(tmp_path: Path) -> None:
    installs = _installed(tmp_path, "2.0.0", "3.0.0", "4.0.0")
    (installs.versions_dir / ".installing-abc").mkdir()
    _commit(installs, "3.0.0")
    installs.begin_trial("4.0.0")
    installs.prune()
    assert sorted(p.name for p in installs.versions_dir.iterdir()) == ["3.0.0", "4.0.0"]


def test_prune_keeps_a_newer_version_not_yet_on_trial(tmp_path: Path) -> None:
    installs = _installed(tmp_path, "2.0.0", "3.0.0")
    _commit(installs, "2.0.0")
    installs.prune()
    assert sorted(p.name for p in installs.versions_dir.iterdir()) == ["2.0.0", "3.0.0"]


def test_prune_removes_a_rolled_back_version(tmp_path: Path) -> None:
    installs = _installed(tmp_path, "2.0.0", "3.0.0")
    _commit(installs, "2.0.0")
    installs.begin_trial("3.0.0")
    installs.roll_back("3.0.0")
    installs.prune()
    assert [p.name for p in installs.versions_dir.iterdir()] == ["2.0.0"]


def test_pointer_at_a_removed_version_is_reset_to_the_base(tmp_path: Path) -> None:
    installs = _installed(tmp_path, "2.0.0")
    installs.begin_trial("2.0.0")
    installs.commit_trial("2.0.0")
    shutil.rmtree(installs.version_dir("2.0.0"))
    assert installs.forget_missing() == Pointer()
    assert installs.pointer() == Pointer()


def test_health_marker_round_trips_a_pid(tmp_path: Path) -> None:
    marker = tmp_path / "root" / "health"
    assert read_health_marker(marker) is None
    write_health_marker(marker, 4242)
    assert read_health_marker(marker) == 4242
