"""The guard's facts of a process, read so that they all describe the process a handle
pins, over a fake machine whose pids can be reused."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from rigway.agent.backends.windows.job_types import CONSTANTS
from rigway.agent.backends.windows.process_facts import (
    FILETIME_UNIX_EPOCH_100NS,
    ProcessView,
    is_same_creation,
    read_process_info,
)

USER_SID = "S-1-5-21-1-2-3-1001"
TAG = "our-tag"
PID = 2000
# 2024-01-01 as FILETIME ticks.
JAN_2024_100NS = FILETIME_UNIX_EPOCH_100NS + 1_704_067_200 * 10_000_000


@dataclass
class FakeProcess:
    name: str
    created_100ns: int
    launch_tag: str | None = None
    ancestors: tuple[int, ...] = ()
    user_sid: str | None = USER_SID


@dataclass
class FakeView:
    process: FakeProcess

    def create_time_s(self) -> float | None:
        return (self.process.created_100ns - FILETIME_UNIX_EPOCH_100NS) / 10_000_000

    def name(self) -> str:
        return self.process.name

    def ancestor_pids(self) -> tuple[int, ...]:
        return self.process.ancestors

    def launch_tag(self) -> str | None:
        return self.process.launch_tag


@dataclass
class FakeFacts:
    """`ProcessFactsPort` over pid → process. `reused_when_opened` hands a pid to a new
    process just before OpenProcess reaches it; `psutil_sees` makes psutil describe
    another process than the one the pid names; `denied` pids cannot be opened."""

    processes: dict[int, FakeProcess] = field(default_factory=dict)
    reused_when_opened: dict[int, FakeProcess] = field(default_factory=dict)
    psutil_sees: dict[int, FakeProcess] = field(default_factory=dict)
    denied: set[int] = field(default_factory=set)
    calls: list[str] = field(default_factory=list)
    open_handles: dict[int, FakeProcess] = field(default_factory=dict)
    _handles: itertools.count[int] = field(default_factory=lambda: itertools.count(0x40, 4))

    def open_query(self, pid: int) -> tuple[int | None, int]:
        self.calls.append("open_query")
        if pid in self.reused_when_opened:
            self.processes[pid] = self.reused_when_opened.pop(pid)
        if pid in self.denied:
            return None, CONSTANTS["ERROR_ACCESS_DENIED"]
        if pid not in self.processes:
            return None, CONSTANTS["ERROR_INVALID_PARAMETER"]
        handle = next(self._handles)
        self.open_handles[handle] = self.processes[pid]
        return handle, 0

    def close_handle(self, handle: int) -> None:
        self.calls.append("close_handle")
        del self.open_handles[handle]

    def creation_time_100ns(self, handle: int) -> int | None:
        return self.open_handles[handle].created_100ns

    def is_critical(self, handle: int) -> bool | None:
        return False

    def user_sid(self, handle: int) -> str | None:
        return self.open_handles[handle].user_sid

    def session_id(self, pid: int) -> int | None:
        return 1

    def view(self, pid: int) -> ProcessView | None:
        self.calls.append("view")
        process = self.psutil_sees.get(pid, self.processes.get(pid))
        return None if process is None else FakeView(process)


def ours(created_100ns: int = JAN_2024_100NS) -> FakeProcess:
    return FakeProcess("helper.exe", created_100ns, launch_tag=TAG, ancestors=(1000, 500))


def stranger(created_100ns: int = JAN_2024_100NS + 50_000_000) -> FakeProcess:
    return FakeProcess("users-editor.exe", created_100ns)


def test_facts_of_a_live_process_are_all_read() -> None:
    port = FakeFacts(processes={PID: ours()})
    info = read_process_info(PID, port)
    assert info is not None
    assert (info.name, info.launch_tag, info.ancestor_pids) == ("helper.exe", TAG, (1000, 500))
    assert (info.user_sid, info.create_time_100ns) == (USER_SID, JAN_2024_100NS)


def test_the_handle_is_opened_before_psutil_is_asked() -> None:
    port = FakeFacts(processes={PID: ours()})
    read_process_info(PID, port)
    assert port.calls.index("open_query") < port.calls.index("view")


def test_a_pid_reused_before_the_handle_is_opened_gives_the_new_process_facts() -> None:
    newcomer = stranger()
    port = FakeFacts(processes={PID: ours()}, reused_when_opened={PID: newcomer})
    info = read_process_info(PID, port)
    assert info is not None
    assert (info.name, info.launch_tag, info.ancestor_pids) == ("users-editor.exe", None, ())
    assert info.create_time_100ns == newcomer.created_100ns


def test_psutil_describing_another_process_than_the_handle_gives_nothing() -> None:
    port = FakeFacts(processes={PID: stranger()}, psutil_sees={PID: ours()})
    assert read_process_info(PID, port) is None


def test_no_such_process_gives_nothing() -> None:
    assert read_process_info(PID, FakeFacts()) is None


def test_a_process_not_ours_to_open_keeps_only_its_name() -> None:
    port = FakeFacts(processes={PID: ours()}, denied={PID})
    info = read_process_info(PID, port)
    assert info is not None
    assert info.name == "helper.exe"
    assert (info.user_sid, info.launch_tag, info.create_time_100ns) == (None, None, None)
    assert info.ancestor_pids == ()


def test_the_handle_is_closed_after_the_last_read() -> None:
    port = FakeFacts(processes={PID: ours()})
    read_process_info(PID, port)
    assert port.calls[-1] == "close_handle"
    assert port.open_handles == {}


def test_creation_times_a_microsecond_apart_are_the_same_instant() -> None:
    as_unix_s = (JAN_2024_100NS - FILETIME_UNIX_EPOCH_100NS) / 10_000_000
    assert is_same_creation(JAN_2024_100NS, as_unix_s + 0.000_001)


def test_creation_times_ten_milliseconds_apart_are_two_processes() -> None:
    as_unix_s = (JAN_2024_100NS - FILETIME_UNIX_EPOCH_100NS) / 10_000_000
    assert not is_same_creation(JAN_2024_100NS, as_unix_s + 0.01)
