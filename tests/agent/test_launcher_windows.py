"""The launcher's Windows path on fakes of its process seam: the launcher goes in its
kill-on-close job before the first start, the child starts in a process group of its
own (with a windowless console when the launcher has none), a stop is CTRL_BREAK to
that group, a child that ignores it is killed after the grace, and a trial passes on a
marker from the child or another process of the launcher's job (a venv redirector's
interpreter), never from the launcher itself or a process outside the job."""

from __future__ import annotations

import logging
import subprocess
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rigway.agent.install_root import InstallRoot, Pointer, write_health_marker
from rigway.agent.launcher import (
    CREATE_NEW_PROCESS_GROUP,
    CREATE_NO_WINDOW,
    Launcher,
    LaunchSettings,
    WindowsChildControl,
    console_interpreter,
)

WAIT_S = 15.0
PYTHONW = "C:\\Rigway\\venv\\Scripts\\pythonw.exe"
PYTHON = "C:\\Rigway\\venv\\Scripts\\python.exe"
LAUNCHER_PID = 10


class FakeChild:
    """A started agent: exits when killed, or on CTRL_BREAK unless it ignores it."""

    def __init__(self, pid: int, *, ignores_break: bool = False, exit_code: int | None = None):
        self.pid = pid
        self.ignores_break = ignores_break
        self.returncode: int | None = None
        self.breaks = 0
        self.is_killed = False
        self._exited = threading.Event()
        # Set once the launcher waits for it to end, past any trial.
        self.is_awaited = threading.Event()
        if exit_code is not None:
            self.exit(exit_code)

    def exit(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = code
        self._exited.set()

    def on_ctrl_break(self) -> None:
        self.breaks += 1
        if not self.ignores_break:
            self.exit(0)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            self.is_awaited.set()
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired("agent", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        raise AssertionError("Windows delivers no signal to a child")

    def kill(self) -> None:
        self.is_killed = True
        self.exit(1)


@dataclass
class Started:
    command: list[str]
    flags: int
    pythonpath: str | None


@dataclass
class Machine:
    """One fake machine: the spawn seam, the launcher's job and its console."""

    children: list[FakeChild]
    has_console_now: bool = True
    job_members: set[int] = field(default_factory=set)
    job_refuses: bool = False
    marker: tuple[Path, int] | None = None  # written as a child starts
    started: list[Started] = field(default_factory=list)
    spawned: list[FakeChild] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    breaks_sent: list[tuple[int, bool]] = field(default_factory=list)
    break_error: OSError | None = None

    # -- spawn
    def spawn(self, command: Sequence[str], env: Mapping[str, str], flags: int) -> FakeChild:
        self.events.append("start")
        self.started.append(Started(list(command), flags, env.get("PYTHONPATH")))
        child = self.children.pop(0)
        self.spawned.append(child)
        self.job_members.add(child.pid)
        if self.marker is not None:
            write_health_marker(*self.marker)
        return child

    # -- LauncherJob
    def contain_launcher(self) -> None:
        self.events.append("contain")
        if self.job_refuses:
            raise PermissionError(5, "Access is denied")
        self.job_members.add(LAUNCHER_PID)

    def member_pids(self) -> frozenset[int]:
        return frozenset(self.job_members)

    # -- ConsoleBreak
    def has_console(self) -> bool:
        return self.has_console_now

    def send_ctrl_break(self, group_pid: int, *, attach: bool) -> None:
        if self.break_error is not None:
            raise self.break_error
        self.breaks_sent.append((group_pid, attach))
        for child in self.spawned:
            if child.pid == group_pid:
                child.on_ctrl_break()

    def control(self) -> WindowsChildControl:
        return WindowsChildControl(
            self,
            self,
            spawn=self.spawn,
            is_file=lambda path: path == PYTHON,
            own_pid=LAUNCHER_PID,
        )


def _settings(
    installs: InstallRoot, *, trial_timeout_s: float = WAIT_S, stop_grace_s: float = WAIT_S
) -> LaunchSettings:
    return LaunchSettings(
        installs.root,
        ("--gateway", "http://gw.invalid"),
        trial_timeout_s,
        python=PYTHONW,
        health_poll_s=0.01,
        stop_grace_s=stop_grace_s,
    )


def _root_on_trial(tmp_path: Path) -> InstallRoot:
    """1.0.0 committed, 2.0.0 on trial (folders only: nothing real runs)."""
    installs = InstallRoot(tmp_path / "root")
    for version in ("1.0.0", "2.0.0"):
        installs.version_dir(version).mkdir(parents=True)
    installs.begin_trial("1.0.0")
    installs.commit_trial("1.0.0")
    installs.begin_trial("2.0.0")
    return installs


def _run_in_thread(launcher: Launcher) -> tuple[threading.Thread, Future[int]]:
    result: Future[int] = Future()

    def run() -> None:
        try:
            result.set_result(launcher.run())
        except BaseException as exc:
            result.set_exception(exc)

    thread = threading.Thread(target=run, name="test-launcher")
    thread.start()
    return thread, result


# ---- starting -----------------------------------------------------------------------


def test_launcher_is_put_in_its_job_before_the_first_start(tmp_path: Path) -> None:
    machine = Machine([FakeChild(100, exit_code=0)])
    installs = InstallRoot(tmp_path / "root")
    Launcher(_settings(installs), installs, machine.control()).run()
    assert machine.events == ["contain", "start"]


def test_job_is_made_once_for_every_restart(tmp_path: Path) -> None:
    machine = Machine([FakeChild(100, exit_code=75), FakeChild(101, exit_code=0)])
    installs = InstallRoot(tmp_path / "root")
    Launcher(_settings(installs), installs, machine.control()).run()
    assert machine.events == ["contain", "start", "start"]


def test_launcher_that_cannot_have_a_job_still_starts_the_agent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    machine = Machine([FakeChild(100, exit_code=0)], job_refuses=True)
    installs = InstallRoot(tmp_path / "root")
    with caplog.at_level(logging.WARNING):
        code = Launcher(_settings(installs), installs, machine.control()).run()
    assert code == 0
    assert machine.events == ["contain", "start"]
    assert "no Job Object for the launcher" in caplog.text


def test_child_in_the_launchers_console_gets_a_process_group_of_its_own(tmp_path: Path) -> None:
    machine = Machine([FakeChild(100, exit_code=0)], has_console_now=True)
    installs = InstallRoot(tmp_path / "root")
    Launcher(_settings(installs), installs, machine.control()).run()
    (started,) = machine.started
    assert started.flags == CREATE_NEW_PROCESS_GROUP
    assert started.command[0] == PYTHONW


def test_launcher_without_console_starts_the_console_interpreter_without_window(
    tmp_path: Path,
) -> None:
    machine = Machine([FakeChild(100, exit_code=0)], has_console_now=False)
    installs = InstallRoot(tmp_path / "root")
    Launcher(_settings(installs), installs, machine.control()).run()
    (started,) = machine.started
    assert started.flags == CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW
    assert started.command[0] == PYTHON
    assert started.command[1:5] == ["-P", "-m", "rigway.cli.main", "agent"]


def test_console_interpreter_is_python_exe_beside_pythonw() -> None:
    assert console_interpreter(PYTHONW, is_file=lambda path: path == PYTHON) == PYTHON


def test_console_interpreter_keeps_pythonw_when_python_exe_is_missing() -> None:
    assert console_interpreter(PYTHONW, is_file=lambda _path: False) == PYTHONW


def test_console_interpreter_leaves_a_console_python_alone() -> None:
    assert console_interpreter(PYTHON, is_file=lambda _path: True) == PYTHON


# ---- stopping -----------------------------------------------------------------------


def test_stop_sends_ctrl_break_to_the_childs_group_and_waits_for_it(tmp_path: Path) -> None:
    child = FakeChild(100)
    machine = Machine([child], has_console_now=True)
    installs = InstallRoot(tmp_path / "root")
    launcher = Launcher(_settings(installs), installs, machine.control())
    thread, result = _run_in_thread(launcher)
    try:
        assert child.is_awaited.wait(WAIT_S)
        launcher.stop()
        assert result.result(WAIT_S) == 0
    finally:
        child.exit(0)
        thread.join(WAIT_S)
    assert machine.breaks_sent == [(100, False)]
    assert not child.is_killed


def test_stop_without_console_attaches_to_the_childs_console(tmp_path: Path) -> None:
    child = FakeChild(100)
    machine = Machine([child], has_console_now=False)
    control = machine.control()
    control.start(["python"], {})
    control.interrupt(child, 15)
    assert machine.breaks_sent == [(100, True)]


def test_trial_that_ignores_ctrl_break_is_killed_after_the_grace(tmp_path: Path) -> None:
    silent = FakeChild(100, ignores_break=True)
    machine = Machine([silent, FakeChild(101, exit_code=0)], has_console_now=False)
    installs = _root_on_trial(tmp_path)
    settings = _settings(installs, trial_timeout_s=0.05, stop_grace_s=0.05)
    assert Launcher(settings, installs, machine.control()).run() == 0
    assert machine.breaks_sent == [(100, True)]
    assert silent.is_killed
    assert installs.pointer() == Pointer("1.0.0", None)
    assert installs.bad_versions() == {"2.0.0"}


def test_trial_that_obeys_ctrl_break_is_not_killed(tmp_path: Path) -> None:
    silent = FakeChild(100)
    machine = Machine([silent, FakeChild(101, exit_code=0)])
    installs = _root_on_trial(tmp_path)
    settings = _settings(installs, trial_timeout_s=0.05)
    Launcher(settings, installs, machine.control()).run()
    assert silent.breaks == 1
    assert not silent.is_killed


def test_ctrl_break_that_cannot_be_sent_is_logged_and_the_kill_follows(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    silent = FakeChild(100)
    machine = Machine([silent, FakeChild(101, exit_code=0)])
    machine.break_error = OSError(6, "The handle is invalid")
    installs = _root_on_trial(tmp_path)
    settings = _settings(installs, trial_timeout_s=0.05, stop_grace_s=0.05)
    with caplog.at_level(logging.WARNING):
        Launcher(settings, installs, machine.control()).run()
    assert silent.is_killed
    assert "cannot send CTRL_BREAK to the agent (pid 100)" in caplog.text


def test_exited_child_is_sent_nothing() -> None:
    child = FakeChild(100, exit_code=0)
    machine = Machine([child])
    control = machine.control()
    control.start(["python"], {})
    control.interrupt(child, 15)
    assert machine.breaks_sent == []


# ---- the trial's health marker ------------------------------------------------------


def test_trial_passes_on_a_marker_from_another_process_of_the_job(tmp_path: Path) -> None:
    # A venv's python.exe (pid 100) runs the real interpreter (pid 4242) in its job.
    redirector = FakeChild(100)
    installs = _root_on_trial(tmp_path)
    machine = Machine([redirector], job_members={4242}, marker=(installs.health_file, 4242))
    launcher = Launcher(_settings(installs), installs, machine.control())
    thread, result = _run_in_thread(launcher)
    try:
        assert redirector.is_awaited.wait(WAIT_S)  # past its trial
        launcher.stop()
        assert result.result(WAIT_S) == 0
    finally:
        redirector.exit(0)
        thread.join(WAIT_S)
    assert installs.pointer() == Pointer("2.0.0", "1.0.0")


def test_marker_from_a_process_outside_the_job_is_no_pass(tmp_path: Path) -> None:
    installs = _root_on_trial(tmp_path)
    children = [FakeChild(100), FakeChild(101, exit_code=0)]
    machine = Machine(children, marker=(installs.health_file, 4242))
    settings = _settings(installs, trial_timeout_s=0.05)
    Launcher(settings, installs, machine.control()).run()
    assert installs.bad_versions() == {"2.0.0"}


def test_marker_with_the_launchers_own_pid_is_no_pass() -> None:
    child = FakeChild(100)
    control = Machine([child]).control()
    control.start(["python"], {})
    assert not control.is_from_child(child, LAUNCHER_PID)
    assert control.is_from_child(child, 100)


def test_without_a_job_only_the_childs_own_pid_passes() -> None:
    child = FakeChild(100)
    control = Machine([child], job_members={4242}, job_refuses=True).control()
    control.start(["python"], {})
    assert not control.is_from_child(child, 4242)
    assert control.is_from_child(child, 100)
