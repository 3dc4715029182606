"""ProcessTracker: real processes launched, and killed with every descendant."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from rigway.agent.apps import (
    LAUNCH_TAG_ENV,
    LaunchError,
    ProcessTracker,
    UnknownAppError,
    _protected_pids,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the POSIX tracker")

WAIT_S = 10.0


@pytest.fixture
def tracker() -> Iterator[ProcessTracker]:
    tracker = ProcessTracker()
    yield tracker
    tracker.kill_all()


def wait_until(condition: Callable[[], bool], timeout_s: float = WAIT_S) -> bool:
    """Poll `condition` until it holds or the deadline passes: the processes watched
    here are not this test's children (re-parented, or grandchildren), so there is no
    exit to wait on."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def wait_for_exit(pid: int) -> None:
    """Until `pid`, a child of this process, has exited; it stays a zombie for the
    tracker's `reap` (the tracker holds its Popen) to collect."""
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)


def tagged_alive(tag: str) -> list[psutil.Process]:
    """Live (non-zombie) processes whose environment carries `tag`."""
    found = []
    for proc in psutil.process_iter(["environ", "status"], ad_value=None):
        environ = proc.info["environ"]
        if environ is None or environ.get(LAUNCH_TAG_ENV) != tag:
            continue
        if proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def is_running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_launch_by_name_then_kill_leaves_nothing(tracker: ProcessTracker) -> None:
    pid = tracker.launch("sleep", ["300"])
    assert is_running(pid)
    assert tracker.launched_pids == [pid]
    assert tracker.kill(pid) == [pid]
    assert not is_running(pid)
    assert tagged_alive(tracker.tag) == []
    assert tracker.launched_pids == []


def test_launched_app_has_its_own_session_tag_and_null_stdio(tracker: ProcessTracker) -> None:
    pid = tracker.launch("/usr/bin/sleep", ["300"])
    assert os.getsid(pid) == pid
    assert psutil.Process(pid).environ()[LAUNCH_TAG_ENV] == tracker.tag
    for fd in (0, 1, 2):
        assert os.readlink(f"/proc/{pid}/fd/{fd}") == "/dev/null"


def test_kill_takes_the_whole_tree_including_a_setsid_child(tracker: ProcessTracker) -> None:
    pid = tracker.launch("sh", ["-c", "sleep 300 & setsid sleep 300 & wait"])
    assert wait_until(lambda: len(tagged_alive(tracker.tag)) == 3)
    assert tracker.kill(pid) == [pid]
    assert tagged_alive(tracker.tag) == []


def test_kill_finds_an_orphaned_escapee_by_its_tag(tracker: ProcessTracker) -> None:
    # The subshell exits at once, so the setsid sleep is reparented away from the tree.
    pid = tracker.launch("sh", ["-c", "(setsid sleep 300 &); exec sleep 300"])

    def has_orphan() -> bool:
        return any(proc.ppid() != pid for proc in tagged_alive(tracker.tag) if proc.pid != pid)

    assert wait_until(has_orphan)
    assert tracker.kill(pid) == [pid]
    assert tagged_alive(tracker.tag) == []


def test_kill_sweeps_descendants_of_an_app_that_already_exited(tracker: ProcessTracker) -> None:
    pid = tracker.launch("sh", ["-c", "(setsid sleep 300 &)"])
    wait_for_exit(pid)
    assert pid in tracker.reap()
    assert wait_until(lambda: len(tagged_alive(tracker.tag)) == 1)  # the escaped sleep
    assert tracker.kill(pid) == [pid]
    assert tagged_alive(tracker.tag) == []


def test_an_app_ignoring_sigterm_is_killed_after_the_grace() -> None:
    tracker = ProcessTracker(terminate_grace_s=0.2)
    # Ignored signals stay ignored across exec, so the sleep ignores SIGTERM too.
    pid = tracker.launch("sh", ["-c", "trap '' TERM; sleep 300 & wait"])
    try:
        assert wait_until(lambda: len(tagged_alive(tracker.tag)) == 2)
        assert tracker.kill(pid) == [pid]
        assert tagged_alive(tracker.tag) == []
    finally:
        tracker.kill_all()


def test_killing_one_app_leaves_the_others_running(tracker: ProcessTracker) -> None:
    first = tracker.launch("sleep", ["300"])
    second = tracker.launch("sleep", ["300"])
    assert tracker.kill(first) == [first]
    assert is_running(second)
    assert tracker.launched_pids == [second]


def test_kill_none_kills_every_app(tracker: ProcessTracker) -> None:
    pids = [tracker.launch("sleep", ["300"]) for _ in range(3)]
    assert tracker.kill(None) == pids
    assert not any(is_running(pid) for pid in pids)
    assert tracker.launched_pids == []


def test_kill_all_with_nothing_launched_returns_nothing(tracker: ProcessTracker) -> None:
    assert tracker.kill_all() == []


def test_killing_a_pid_not_launched_here_raises(tracker: ProcessTracker) -> None:
    with pytest.raises(UnknownAppError, match="not launched by this session"):
        tracker.kill(os.getpid())


def test_killing_an_app_twice_raises(tracker: ProcessTracker) -> None:
    pid = tracker.launch("sleep", ["300"])
    tracker.kill(pid)
    with pytest.raises(UnknownAppError):
        tracker.kill(pid)


def test_reap_collects_an_app_that_exited(tracker: ProcessTracker) -> None:
    pid = tracker.launch("true", [])
    wait_for_exit(pid)
    assert tracker.reap() == [pid]
    assert not psutil.pid_exists(pid)


@pytest.mark.parametrize(
    ("make_path", "reason"),
    [
        (lambda tmp: str(tmp / "missing"), "does not exist"),
        (lambda tmp: str(tmp), "is a directory"),
        (lambda tmp: str(tmp / "plain.txt"), "is not executable"),
        (lambda tmp: "rigway-no-such-command", "not found on PATH"),
        (lambda tmp: "bin/sleep", "is relative"),
        (lambda tmp: "", "is empty"),
    ],
)
def test_launching_an_unstartable_path_says_why(
    tracker: ProcessTracker, tmp_path: Path, make_path: Callable[[Path], str], reason: str
) -> None:
    (tmp_path / "plain.txt").write_text("not a program\n")
    with pytest.raises(LaunchError, match=reason):
        tracker.launch(make_path(tmp_path), [])
    assert tracker.launched_pids == []


def test_launch_error_is_a_value_error() -> None:
    assert issubclass(LaunchError, ValueError)
    assert issubclass(UnknownAppError, KeyError)


def test_executable_that_cannot_be_exec_raises_launch_error(
    tracker: ProcessTracker, tmp_path: Path
) -> None:
    script = tmp_path / "garbage"
    script.write_bytes(b"\x7fELF not really\n")
    script.chmod(0o755)
    with pytest.raises(LaunchError, match="could not be started"):
        tracker.launch(str(script), [])


def test_init_the_agent_and_its_parents_are_protected() -> None:
    protected = _protected_pids()
    assert {1, os.getpid(), os.getppid()} <= protected
