"""JobAppTracker over a fake JobPort: launch order and rollback, and the kill path."""

from __future__ import annotations

import ctypes
import struct

import pytest

from rigway.agent.apps import LAUNCH_ID_ENV, LAUNCH_TAG_ENV, LaunchError, UnknownAppError
from rigway.agent.backends.windows.job_types import (
    CONSTANTS,
    CREATION_FLAGS,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    PROCESS_INFORMATION,
    STARTUPINFOW,
    job_limits,
    parse_process_id_list,
    process_id_list_size,
)
from rigway.agent.backends.windows.jobs import JobAppTracker
from rigway.agent.backends.windows.launch import (
    build_command_line,
    environment_block,
    find_executable,
)
from rigway.agent.backends.windows.protect import ProcessInfo
from tests.agent.windows.fake_win32 import AGENT_PID, FakeJobPort, FakeProcess, FakeWin32

NOTEPAD = "C:\\Windows\\System32\\notepad.exe"
GRACE_S = 2.0
KILL_WAIT_S = 1.0


def tracker_over(port: FakeJobPort, env: dict[str, str] | None = None) -> JobAppTracker:
    return JobAppTracker(
        port,
        env={"PATH": "x"} if env is None else env,
        close_grace_s=GRACE_S,
        kill_wait_s=KILL_WAIT_S,
    )


@pytest.fixture
def port() -> FakeJobPort:
    return FakeJobPort()


@pytest.fixture
def tracker(port: FakeJobPort) -> JobAppTracker:
    return tracker_over(port)


# -- launch ----------------------------------------------------------------------------


def test_launch_runs_create_suspended_then_job_then_assign_then_resume(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    tracker.launch("notepad", [])

    steps = [c for c in port.call_names() if c != "close_handle"]
    assert steps == ["create_process_suspended", "create_kill_on_close_job", "assign", "resume"]


def test_launch_assigns_the_new_process_to_the_new_job(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("notepad", [])

    (job,) = port.jobs
    assert port.machine.processes[pid].job == job
    assert port.machine.processes[pid].suspended is False


def test_launch_closes_the_thread_handle_and_keeps_process_and_job(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("notepad", [])

    assert sorted(kind for kind, _ in port.open_handles.values()) == ["job", "process"]
    assert ("process", pid) in port.open_handles.values()


def test_launch_quotes_the_resolved_program_and_arguments(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    tracker.launch("notepad.exe", ["my file.txt", 'say "hi"'])

    assert port.calls[0] == (
        "create_process_suspended",
        f'{NOTEPAD} "my file.txt" "say \\"hi\\""',
    )


def test_launch_gives_the_child_the_tag_and_a_launch_id(port: FakeJobPort) -> None:
    tracker = tracker_over(port, env={"PATH": "x", "rigway_launch_tag": "stale"})

    tracker.launch("notepad", [])

    assert port.last_env[LAUNCH_TAG_ENV] == tracker.tag
    assert len(port.last_env[LAUNCH_ID_ENV]) == 32
    assert "rigway_launch_tag" not in port.last_env


def test_launch_ids_differ_between_launches(port: FakeJobPort, tracker: JobAppTracker) -> None:
    first, second = tracker.launch("notepad", []), tracker.launch("notepad", [])

    assert port.machine.processes[first].launch_id != port.machine.processes[second].launch_id


def test_launch_records_the_pid_as_launched(tracker: JobAppTracker) -> None:
    pid = tracker.launch("tool", [])

    assert tracker.launched_pids == [pid]


@pytest.mark.parametrize("step", ["create_kill_on_close_job", "assign", "resume"])
def test_launch_failing_after_creation_ends_the_suspended_process(
    port: FakeJobPort, tracker: JobAppTracker, step: str
) -> None:
    port.fail_on.add(step)

    with pytest.raises(LaunchError, match="could not be started in a job"):
        tracker.launch("notepad", [])

    (created,) = [p for p in port.machine.processes.values() if p.name.lower() == "notepad.exe"]
    assert created.alive is False
    assert port.open_handles == {}
    assert tracker.launched_pids == []


def test_launch_failing_to_create_the_process_raises_launch_error(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    port.fail_on.add("create_process_suspended")

    with pytest.raises(LaunchError, match="notepad could not be started"):
        tracker.launch("notepad", [])

    assert port.open_handles == {}


def test_launch_of_a_name_not_on_path_creates_nothing(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    with pytest.raises(LaunchError, match="not found on PATH"):
        tracker.launch("nosuchapp", [])

    assert port.calls == []


def test_launch_with_an_environment_windows_refuses_creates_nothing(port: FakeJobPort) -> None:
    tracker = tracker_over(port, env={"A=B": "1"})

    with pytest.raises(LaunchError, match="cannot be passed"):
        tracker.launch("notepad", [])

    assert port.machine.processes.keys() == FakeWin32().processes.keys()


# -- kill ------------------------------------------------------------------------------


def test_kill_of_a_pid_never_launched_raises_unknown_app(tracker: JobAppTracker) -> None:
    with pytest.raises(UnknownAppError):
        tracker.kill(AGENT_PID)


def test_kill_of_an_app_that_closes_its_window_needs_no_terminate(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("notepad", [])
    port.machine.open_window(0x10, pid)

    assert tracker.kill(pid) == [pid]

    assert "terminate_job" not in port.call_names()
    assert port.waits[0] == GRACE_S


def test_kill_of_an_app_ignoring_wm_close_terminates_its_job_after_the_grace(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("notepad", [])
    port.machine.open_window(0x10, pid, closes_on_wm_close=False)
    child = port.machine.spawn(pid, "helper.exe")

    assert tracker.kill(pid) == [pid]

    names = port.call_names()
    assert names.index("wait_exit") < names.index("terminate_job")
    assert port.waits[0] == GRACE_S
    assert not port.machine.is_alive(child.pid)


def test_kill_of_an_app_without_windows_skips_the_grace(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("tool", [])

    assert tracker.kill(pid) == [pid]

    assert GRACE_S not in port.waits
    assert "terminate_job" in port.call_names()


def test_kill_sweeps_an_escapee_carrying_the_launch_tag(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("tool", [])
    escapee = port.machine.spawn(pid, "broker-child.exe", breaks_away=True)

    tracker.kill(pid)

    assert not port.machine.is_alive(escapee.pid)
    assert ("terminate_pid", escapee.pid) in port.calls


def test_kill_of_one_app_spares_another_apps_escapee(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    first, second = tracker.launch("tool", []), tracker.launch("tool", [])
    other_escapee = port.machine.spawn(second, "other.exe", breaks_away=True)

    tracker.kill(first)

    assert port.machine.is_alive(other_escapee.pid)
    assert port.machine.is_alive(second)


def test_kill_spares_a_protected_job_member_and_ends_the_others_one_by_one(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("tool", [])
    shell = port.machine.spawn(pid, "explorer.exe")
    helper = port.machine.spawn(pid, "helper.exe")

    assert tracker.kill(pid) == [pid]

    assert "terminate_job" not in port.call_names()
    assert not port.machine.is_alive(helper.pid)
    assert port.machine.is_alive(shell.pid)


def test_kill_lifts_kill_on_close_before_closing_a_job_with_a_spared_member(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("tool", [])
    port.machine.spawn(pid, "explorer.exe")

    tracker.kill(pid)

    (job,) = port.jobs
    assert port.calls.index(("disarm_job", job)) < port.calls.index(("close_handle", job))


def test_kill_refuses_a_tagged_process_of_another_user(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("tool", [])
    stranger = port.machine.spawn(pid, "elevated.exe", breaks_away=True)
    stranger.user_sid = "S-1-5-18"

    tracker.kill(pid)

    assert port.machine.is_alive(stranger.pid)
    assert ("terminate_pid", stranger.pid) not in port.calls


def test_kill_reports_only_launched_pids_that_ended(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    stuck = tracker.launch("tool", [])
    port.machine.processes[stuck].survives_termination = True
    gone = tracker.launch("tool", [])

    assert tracker.kill_all() == [gone]

    assert tracker.launched_pids == [stuck]


def test_kill_of_a_single_instance_app_spares_the_instance_it_handed_off_to(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    existing = port.machine.add_process("chrome.exe", parent_pid=None)
    port.machine.open_window(0x20, existing.pid)
    port.on_resume.append(port.machine.end_process)  # hands the URL over and exits

    pid = tracker.launch("tool", ["https://example.com"])

    assert tracker.kill(pid) == [pid]
    assert port.machine.is_alive(existing.pid)
    assert 0x20 in port.machine.windows


def test_kill_runs_a_second_round_for_a_process_started_during_the_first(
    port: FakeJobPort,
) -> None:
    class SpawnsWhileDying(FakeJobPort):
        """An escapee appears while the first round's kills are being waited for."""

        late: FakeProcess | None = None

        def wait_exit(self, pids: frozenset[int], timeout_s: float) -> frozenset[int]:
            if timeout_s == KILL_WAIT_S and self.late is None:
                self.late = self.machine.spawn(min(pids), "late.exe", breaks_away=True)
            return super().wait_exit(pids, timeout_s)

    spawning = SpawnsWhileDying(port.machine)
    tracker = tracker_over(spawning)
    pid = tracker.launch("tool", [])

    tracker.kill(pid)

    assert spawning.late is not None
    assert not spawning.machine.is_alive(spawning.late.pid)


def test_kill_closes_every_handle_of_an_ended_app(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("tool", [])

    tracker.kill(pid)

    assert port.open_handles == {}
    assert tracker.launched_pids == []


def test_kill_of_an_app_that_exited_on_its_own_returns_it(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("tool", [])
    port.machine.end_process(pid)

    assert tracker.kill(pid) == [pid]


def test_kill_all_ends_every_app_and_every_tagged_escapee(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    first, second = tracker.launch("tool", []), tracker.launch("notepad", [])
    escapee = port.machine.spawn(second, "escapee.exe", breaks_away=True)

    assert tracker.kill_all() == [first, second]

    assert not port.machine.is_alive(escapee.pid)


# -- ownership and the guard's view ------------------------------------------------------


def test_owned_pids_are_job_members_and_tagged_escapees(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("tool", [])
    child = port.machine.spawn(pid, "child.exe")
    escapee = port.machine.spawn(pid, "escapee.exe", breaks_away=True)

    assert tracker.owned_pids() == {pid, child.pid, escapee.pid}


def test_owned_pids_leave_out_what_the_guard_spares(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("tool", [])
    port.machine.spawn(pid, "explorer.exe")

    assert tracker.owned_pids() == {pid}


def test_guard_context_names_the_agent_and_what_was_launched(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("tool", [])
    child = port.machine.spawn(pid, "child.exe")

    context = tracker.guard_context()

    assert context.agent_pid == AGENT_PID
    assert context.launched_pids == {pid, child.pid}
    assert context.launch_tag == tracker.tag


# -- the pure pieces the binding uses ----------------------------------------------------


def test_job_limits_kill_on_close_and_never_break_away() -> None:
    flags = job_limits(kill_on_close=True).BasicLimitInformation.LimitFlags

    assert flags == CONSTANTS["JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE"]


def test_disarmed_job_limits_are_empty() -> None:
    assert job_limits(kill_on_close=False).BasicLimitInformation.LimitFlags == 0


def test_creation_flags_start_suspended_and_never_break_away_from_a_job() -> None:
    assert CREATION_FLAGS & CONSTANTS["CREATE_SUSPENDED"]
    assert CREATION_FLAGS & CONSTANTS["CREATE_UNICODE_ENVIRONMENT"]
    assert not CREATION_FLAGS & CONSTANTS["CREATE_BREAKAWAY_FROM_JOB"]


def test_layouts_are_the_x64_sizes() -> None:
    assert ctypes.sizeof(JOBOBJECT_EXTENDED_LIMIT_INFORMATION) == 144
    assert ctypes.sizeof(STARTUPINFOW) == 104
    assert ctypes.sizeof(PROCESS_INFORMATION) == 24


def test_process_id_list_parses_the_pids_that_fit() -> None:
    raw = bytearray(process_id_list_size(2))
    struct.pack_into("<II", raw, 0, 3, 2)
    struct.pack_into("<QQ", raw, 8, 1200, 1204)

    assert parse_process_id_list(bytes(raw)) == (3, (1200, 1204))


def test_process_id_list_count_beyond_the_buffer_is_cut() -> None:
    raw = bytearray(process_id_list_size(1))
    struct.pack_into("<IIQ", raw, 0, 5, 5, 1200)

    assert parse_process_id_list(bytes(raw)) == (5, (1200,))


def test_environment_block_is_sorted_without_regard_to_case_and_ends_in_two_nuls() -> None:
    block = environment_block({"b": "2", "A": "1", "=C:": "C:\\"})

    assert block == "=C:=C:\\\0A=1\0b=2\0\0"


def test_empty_environment_block_is_two_nuls() -> None:
    assert environment_block({}) == "\0\0"


@pytest.mark.parametrize("env", [{"": "x"}, {"A=B": "x"}, {"A": "x\0y"}])
def test_environment_windows_cannot_hold_is_refused(env: dict[str, str]) -> None:
    with pytest.raises(LaunchError):
        environment_block(env)


FILES = frozenset({"c:\\apps\\tool.exe", "c:\\apps\\run.cmd", "c:\\work\\tool.exe"})


def find(path: str) -> str:
    return find_executable(
        path, search_path="C:\\Apps", pathext=".COM;.EXE;.CMD", is_file=lambda p: p.lower() in FILES
    )


def test_bare_name_gets_a_pathext_extension() -> None:
    assert find("tool").lower() == "c:\\apps\\tool.exe"


def test_absolute_path_without_extension_gets_one() -> None:
    assert find("C:\\Work\\tool").lower() == "c:\\work\\tool.exe"


@pytest.mark.parametrize("path", ["work\\tool.exe", ".\\tool.exe", "C:tool.exe", "\\tool.exe"])
def test_relative_path_is_refused(path: str) -> None:
    with pytest.raises(LaunchError, match="relative"):
        find(path)


def test_batch_file_is_refused() -> None:
    with pytest.raises(LaunchError, match="batch file"):
        find("run")


def test_command_line_with_a_nul_is_refused() -> None:
    with pytest.raises(LaunchError, match="NUL"):
        build_command_line("C:\\a.exe", ["x\0"])


def test_command_line_longer_than_windows_allows_is_refused() -> None:
    with pytest.raises(LaunchError, match="32766"):
        build_command_line("C:\\a.exe", ["x" * 40_000])


def test_kill_one_by_one_spares_a_process_that_took_a_listed_members_pid(
    port: FakeJobPort,
) -> None:
    class ReusesAMembersPid(FakeJobPort):
        """The helper exits between the job's member list and its vetting, and an
        unrelated process of the user gets its pid."""

        reused: int | None = None

        def process_info(self, pid: int) -> ProcessInfo | None:
            if pid == self.reused and "post_close_to_windows_of" in self.call_names():
                self.reused = None
                self.machine.reuse_pid(pid, "users-editor.exe")
            return super().process_info(pid)

    reusing = ReusesAMembersPid(port.machine)
    tracker = tracker_over(reusing)
    pid = tracker.launch("tool", [])
    port.machine.spawn(pid, "explorer.exe")  # spared: the job is not terminated whole
    helper = port.machine.spawn(pid, "helper.exe")
    reusing.reused = helper.pid

    tracker.kill(pid)

    assert port.machine.processes[helper.pid].name == "users-editor.exe"
    assert port.machine.is_alive(helper.pid)


def test_kill_one_by_one_ends_members_through_their_job(
    port: FakeJobPort, tracker: JobAppTracker
) -> None:
    pid = tracker.launch("tool", [])
    port.machine.spawn(pid, "explorer.exe")
    helper = port.machine.spawn(pid, "helper.exe")

    tracker.kill(pid)

    (job,) = port.jobs
    assert ("terminate_member", job, helper.pid) in port.calls
    assert not port.machine.is_alive(helper.pid)
