"""The launcher with real child processes: stand-in releases (tests/support/tiny_release)
installed side by side. A trial that comes up is committed; one that exits or stays
silent is stopped, recorded as bad and rolled back; a restart code starts what the
pointer names now; a stop reaches the child."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path

import pytest

from rigway.agent.install_root import InstallRoot, Pointer
from rigway.agent.launcher import Launcher, LaunchSettings, PosixChildControl, agent_command
from tests.support.tiny_release import FAILS, HEALTHY, SILENT, build_wheel, restarts_into

WAIT_S = 15.0


def _root(tmp_path: Path, **releases: str) -> InstallRoot:
    """An install root with each `v1_0_0=behaviour` release installed as 1.0.0."""
    installs = InstallRoot(tmp_path / "root")
    for name, behaviour in releases.items():
        version = name.removeprefix("v").replace("_", ".")
        wheel = build_wheel(tmp_path / "wheels", version, behaviour)
        installs.install_wheel(wheel, version)
    return installs


def _point(installs: InstallRoot, version: str, *, trial_after: str | None = None) -> None:
    installs.begin_trial(version)
    installs.commit_trial(version)
    if trial_after is not None:
        installs.begin_trial(trial_after)


def _wait_until(condition: Callable[[], bool]) -> None:
    # The condition is another process's file: there is no event to wait on.
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@contextmanager
def _launching(
    installs: InstallRoot, trial_timeout_s: float = WAIT_S
) -> Iterator[tuple[Launcher, Future[int]]]:
    settings = LaunchSettings(
        installs.root, ("--gateway", "http://gw.invalid"), trial_timeout_s, health_poll_s=0.02
    )
    launcher = Launcher(settings, installs)
    result: Future[int] = Future()

    def run() -> None:
        try:
            result.set_result(launcher.run())
        except BaseException as exc:
            result.set_exception(exc)

    thread = threading.Thread(target=run, name="test-launcher")
    thread.start()
    try:
        yield launcher, result
    finally:
        launcher.stop()
        thread.join(WAIT_S)
        assert not thread.is_alive()


def _ran(installs: InstallRoot, version: str) -> bool:
    return (installs.root / f"ran-{version}").exists()


def test_trial_that_brings_its_link_up_is_committed(tmp_path: Path) -> None:
    installs = _root(tmp_path, v1_0_0=HEALTHY, v2_0_0=HEALTHY)
    _point(installs, "1.0.0", trial_after="2.0.0")
    with _launching(installs) as (launcher, result):
        _wait_until(lambda: installs.pointer() == Pointer("2.0.0", "1.0.0"))
        launcher.stop()
        assert result.result(WAIT_S) == 0
    assert not _ran(installs, "1.0.0")
    assert installs.bad_versions() == frozenset()


def test_trial_that_exits_first_is_rolled_back_and_recorded_bad(tmp_path: Path) -> None:
    installs = _root(tmp_path, v1_0_0=HEALTHY, v2_0_0=FAILS)
    _point(installs, "1.0.0", trial_after="2.0.0")
    with _launching(installs) as (_launcher, _result):
        _wait_until(lambda: _ran(installs, "1.0.0"))
    assert _ran(installs, "2.0.0")
    assert installs.pointer() == Pointer("1.0.0", None)
    assert installs.bad_versions() == {"2.0.0"}


def test_trial_that_stays_silent_is_stopped_and_rolled_back(tmp_path: Path) -> None:
    installs = _root(tmp_path, v1_0_0=HEALTHY, v2_0_0=SILENT)
    _point(installs, "1.0.0", trial_after="2.0.0")
    with _launching(installs, trial_timeout_s=0.5) as (_launcher, _result):
        _wait_until(lambda: _ran(installs, "1.0.0"))
    assert installs.pointer() == Pointer("1.0.0", None)
    assert installs.bad_versions() == {"2.0.0"}


def test_rolled_back_version_folder_is_removed_before_the_next_start(tmp_path: Path) -> None:
    installs = _root(tmp_path, v1_0_0=HEALTHY, v2_0_0=FAILS)
    _point(installs, "1.0.0", trial_after="2.0.0")
    with _launching(installs) as (_launcher, _result):
        _wait_until(lambda: _ran(installs, "1.0.0"))
    assert [p.name for p in installs.versions_dir.iterdir()] == ["1.0.0"]


def test_restart_code_starts_the_version_the_agent_put_on_trial(tmp_path: Path) -> None:
    installs = _root(tmp_path, v1_0_0=restarts_into("2.0.0"), v2_0_0=HEALTHY)
    _point(installs, "1.0.0")
    with _launching(installs) as (launcher, result):
        _wait_until(lambda: installs.pointer() == Pointer("2.0.0", "1.0.0"))
        launcher.stop()
        assert result.result(WAIT_S) == 0
    assert _ran(installs, "1.0.0")


def test_exit_of_a_committed_version_ends_the_launcher_with_its_code(tmp_path: Path) -> None:
    installs = _root(tmp_path, v1_0_0=FAILS)
    _point(installs, "1.0.0")
    with _launching(installs) as (_launcher, result):
        assert result.result(WAIT_S) == 3
    assert installs.pointer() == Pointer("1.0.0", None)
    assert installs.bad_versions() == frozenset()


def test_child_is_told_its_install_root_health_file_and_run_options(tmp_path: Path) -> None:
    installs = _root(tmp_path, v1_0_0=HEALTHY)
    _point(installs, "1.0.0")
    with _launching(installs):
        _wait_until(lambda: _ran(installs, "1.0.0"))
    args = json.loads((installs.root / "ran-1.0.0").read_text())
    root, health = str(installs.root), str(installs.health_file)
    assert args == [
        "agent", "run", "--gateway", "http://gw.invalid",
        "--install-root", root, "--health-file", health,
    ]  # fmt: skip


def test_child_command_keeps_the_working_directory_off_sys_path(tmp_path: Path) -> None:
    command = agent_command(LaunchSettings(tmp_path), InstallRoot(tmp_path))
    assert command[1:5] == ["-P", "-m", "rigway.cli.main", "agent"]


def test_launch_settings_refuse_a_trial_timeout_of_zero(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="trial_timeout_s"):
        LaunchSettings(tmp_path, trial_timeout_s=0)


class _ExitedChild:
    """A child that has already exited with `code`."""

    def __init__(self, code: int) -> None:
        self.pid = 4242
        self.code = code

    def poll(self) -> int | None:
        return self.code

    def wait(self, timeout: float | None = None) -> int:
        return self.code

    def send_signal(self, sig: int) -> None:
        raise AssertionError("an exited child is sent nothing")

    def kill(self) -> None:
        raise AssertionError("an exited child is not killed")


def test_fresh_install_root_runs_the_base_installation(tmp_path: Path) -> None:
    # `agent install` seeds nothing: with no version installed the launcher runs the
    # installation it runs from itself.
    installs = InstallRoot(tmp_path / "fresh")
    started: list[tuple[list[str], dict[str, str], int]] = []

    def spawn(command: Sequence[str], env: Mapping[str, str], flags: int) -> _ExitedChild:
        started.append((list(command), dict(env), flags))
        return _ExitedChild(0)

    settings = LaunchSettings(installs.root, ("--gateway", "http://gw.invalid"))
    code = Launcher(settings, installs, PosixChildControl(spawn)).run()
    ((command, env, flags),) = started
    assert code == 0
    assert command == agent_command(settings, installs)
    assert env.get("PYTHONPATH") == os.environ.get("PYTHONPATH")
    assert flags == 0
    assert installs.pointer() == Pointer()
