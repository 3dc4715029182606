"""Typed fakes of the Windows ports, over one scripted machine.

`FakeWin32` holds processes (with their facts for the guard, job membership and
launch tags) and top-level windows. The port fakes act on it as Windows would:
`FakeJobPort` (apps in jobs), and the window and desktop-state fakes beside it. A
conformance suite composes them over one `FakeWin32`, so an app the tracker launches can
open a window that the windows role lists, closes and attributes to it.

Nothing waits: a wait returns at once with what is still running or open, and records
the timeout it was given so tests can check which grace applied.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rigway.agent.apps import LAUNCH_ID_ENV, LAUNCH_TAG_ENV
from rigway.agent.backends.base import Rect
from rigway.agent.backends.windows.desktop_state import SessionInfo
from rigway.agent.backends.windows.jobs import SuspendedProcess
from rigway.agent.backends.windows.launch import environment_block, find_executable
from rigway.agent.backends.windows.protect import ProcessInfo
from rigway.agent.backends.windows.toplevel import TopLevelWindow

__all__ = [
    "AGENT_PID",
    "CONSOLE_SESSION",
    "LAUNCHER_PID",
    "SESSION_ID",
    "USER_SID",
    "FakeJob",
    "FakeJobPort",
    "FakeProcess",
    "FakeStatePort",
    "FakeWin32",
    "FakeWindow",
    "FakeWindowPort",
]

SESSION_ID = 1
USER_SID = "S-1-5-21-1111-2222-3333-1001"
LAUNCHER_PID = 400
AGENT_PID = 500
# A Windows-shaped PATH with two directories the fakes' files live in.
SEARCH_PATH = "C:\\Windows\\System32;C:\\Apps"


@dataclass
class FakeProcess:
    pid: int
    name: str
    parent_pid: int | None = None
    session_id: int | None = SESSION_ID
    user_sid: str | None = USER_SID
    is_critical: bool | None = False
    launch_tag: str | None = None
    launch_id: str | None = None
    job: int | None = None
    create_time_100ns: int = 0
    alive: bool = True
    suspended: bool = False
    # Scripted behaviour: TerminateProcess fails (access denied, stuck in the kernel).
    survives_termination: bool = False
    # Whether it exits once its last window has closed (most GUI apps do).
    exits_when_windows_close: bool = True


@dataclass
class FakeWindow:
    hwnd: int
    pid: int
    visible: bool = True
    owner_hwnd: int = 0
    ex_style: int = 0
    cloaked: bool = False
    class_name: str = "FakeApp"
    # On the virtual screen, as DWM draws the frame; None: its bounds cannot be read.
    bounds: Rect | None = None
    minimised: bool = False
    foreground: bool = False
    # False: the app asks "save changes?" (or hangs) and the window stays.
    closes_on_wm_close: bool = True


@dataclass
class FakeJob:
    handle: int
    kill_on_close: bool = True
    closed: bool = False
    terminated: int = 0


class FakeWin32:
    """One machine: System, the agent's launcher, the agent, and what tests add."""

    def __init__(self) -> None:
        self.processes: dict[int, FakeProcess] = {}
        self.windows: dict[int, FakeWindow] = {}  # insertion order is the z-order
        self._pids = itertools.count(1000, 4)
        self._ticks = itertools.count(133_000_000_000_000_000, 10_000)
        self.add_process("System", pid=4, user_sid="S-1-5-18", session_id=0, is_critical=True)
        self.add_process("cmd.exe", pid=LAUNCHER_PID)
        self.add_process("python.exe", pid=AGENT_PID, parent_pid=LAUNCHER_PID)

    def add_process(self, name: str, *, pid: int | None = None, **facts: object) -> FakeProcess:
        """A running process; `facts` are FakeProcess fields (parent_pid, user_sid, …)."""
        pid = next(self._pids) if pid is None else pid
        process = FakeProcess(pid=pid, name=name, create_time_100ns=next(self._ticks))
        for key, value in facts.items():
            if not hasattr(process, key):
                raise TypeError(f"FakeProcess has no field {key}")
            setattr(process, key, value)
        self.processes[pid] = process
        return process

    def spawn(self, parent_pid: int, name: str, *, breaks_away: bool = False) -> FakeProcess:
        """A child as Windows starts it: in its parent's job (unless it breaks away,
        like a broker-started process), with its parent's environment."""
        parent = self.processes[parent_pid]
        return self.add_process(
            name,
            parent_pid=parent_pid,
            launch_tag=parent.launch_tag,
            launch_id=parent.launch_id,
            job=None if breaks_away else parent.job,
        )

    def open_window(self, hwnd: int, pid: int, **attrs: object) -> FakeWindow:
        """A top-level window of `pid`; `attrs` are FakeWindow fields."""
        window = FakeWindow(hwnd=hwnd, pid=pid)
        for key, value in attrs.items():
            if not hasattr(window, key):
                raise TypeError(f"FakeWindow has no field {key}")
            setattr(window, key, value)
        self.windows[hwnd] = window
        return window

    def reuse_pid(self, pid: int, name: str) -> FakeProcess:
        """The process with `pid` exits, and Windows gives its pid to a new, unrelated
        process of the same user (in no job, without the tag)."""
        self.end_process(pid)
        return self.add_process(name, pid=pid)

    def is_alive(self, pid: int) -> bool:
        process = self.processes.get(pid)
        return process is not None and process.alive

    def alive(self, pids: frozenset[int]) -> frozenset[int]:
        return frozenset(pid for pid in pids if self.is_alive(pid))

    def end_process(self, pid: int) -> None:
        """The process exits; its windows go with it."""
        self.processes[pid].alive = False
        for hwnd in [h for h, w in self.windows.items() if w.pid == pid]:
            del self.windows[hwnd]

    def terminate(self, pid: int) -> bool:
        process = self.processes.get(pid)
        if process is None or not process.alive or process.survives_termination:
            return False
        self.end_process(pid)
        return True

    def post_close(self, hwnd: int) -> None:
        """WM_CLOSE as an app answers it: the window closes (or stays, if scripted),
        and a process whose last window closed exits."""
        window = self.windows.get(hwnd)
        if window is None or not window.closes_on_wm_close:
            return
        del self.windows[hwnd]
        process = self.processes[window.pid]
        has_windows = any(w.pid == window.pid for w in self.windows.values())
        if process.exits_when_windows_close and not has_windows:
            self.end_process(window.pid)

    def ancestors(self, pid: int) -> tuple[int, ...]:
        """Parents up the chain, cut at the first that is gone (as psutil does)."""
        chain: list[int] = []
        parent = self.processes[pid].parent_pid
        while parent is not None and self.is_alive(parent) and parent not in chain:
            chain.append(parent)
            parent = self.processes[parent].parent_pid
        return tuple(chain)

    def process_info(self, pid: int) -> ProcessInfo | None:
        process = self.processes.get(pid)
        if process is None or not process.alive:
            return None
        return ProcessInfo(
            pid=pid,
            name=process.name,
            session_id=process.session_id,
            user_sid=process.user_sid,
            is_critical=process.is_critical,
            ancestor_pids=self.ancestors(pid),
            launch_tag=process.launch_tag,
            create_time_100ns=process.create_time_100ns,
        )

    def terminate_pid(self, info: ProcessInfo, *, job: int | None = None) -> bool:
        """TerminateProcess on the pid, only if it names the process `info` describes
        (and, given `job`, that process is in it)."""
        process = self.processes.get(info.pid)
        if process is None or process.create_time_100ns != info.create_time_100ns:
            return False  # the pid names another process now
        if job is not None and process.job != job:
            return False
        return self.terminate(info.pid)


class FakeJobPort:
    """`JobPort` over a `FakeWin32`. `calls` records every call in order; a step named in
    `fail_on` raises OSError; `on_resume` hooks run (with the pid) when a launched
    process resumes, e.g. to spawn its children or make it exit at once."""

    def __init__(
        self, machine: FakeWin32 | None = None, *, files: frozenset[str] = frozenset()
    ) -> None:
        self.machine = FakeWin32() if machine is None else machine
        self.files = {name.lower() for name in files} | {
            "c:\\windows\\system32\\notepad.exe",
            "c:\\apps\\tool.exe",
        }
        self.search_path = SEARCH_PATH
        self.calls: list[tuple[object, ...]] = []
        self.fail_on: set[str] = set()
        self.on_resume: list[Callable[[int], None]] = []
        self.jobs: dict[int, FakeJob] = {}
        self.open_handles: dict[int, tuple[str, int]] = {}  # handle → (kind, pid or job)
        self.waits: list[float] = []
        self.last_env: dict[str, str] = {}
        self._handles = itertools.count(0x100, 4)

    def _record(self, name: str, *args: object) -> None:
        self.calls.append((name, *args))
        if name in self.fail_on:
            raise OSError(5, f"{name} failed (scripted)")

    def call_names(self) -> list[object]:
        return [call[0] for call in self.calls]

    def _handle(self, kind: str, target: int) -> int:
        handle = next(self._handles)
        self.open_handles[handle] = (kind, target)
        return handle

    def _target(self, handle: int, kind: str) -> int:
        held_kind, target = self.open_handles[handle]  # KeyError: a closed handle is used
        assert held_kind == kind, f"handle {handle:#x} is a {held_kind}, not a {kind}"
        return target

    # -- JobPort -----------------------------------------------------------------------
    def resolve_executable(self, path: str) -> str:
        return find_executable(
            path,
            search_path=self.search_path,
            pathext=".COM;.EXE;.BAT;.CMD",
            is_file=lambda name: name.lower() in self.files,
        )

    def create_process_suspended(
        self, executable: str, command_line: str, env: Mapping[str, str], cwd: str | None
    ) -> SuspendedProcess:
        self._record("create_process_suspended", command_line)
        environment_block(env)  # what the binding builds: raises for what Windows refuses
        self.last_env = dict(env)
        process = self.machine.add_process(
            executable.rsplit("\\", 1)[-1],
            parent_pid=AGENT_PID,
            launch_tag=env.get(LAUNCH_TAG_ENV),
            launch_id=env.get(LAUNCH_ID_ENV),
            suspended=True,
        )
        return SuspendedProcess(
            pid=process.pid,
            process_handle=self._handle("process", process.pid),
            thread_handle=self._handle("thread", process.pid),
        )

    def create_kill_on_close_job(self) -> int:
        self._record("create_kill_on_close_job")
        handle = self._handle("job", 0)
        self.jobs[handle] = FakeJob(handle)
        return handle

    def assign(self, job: int, process: int) -> None:
        self._record("assign", job, process)
        self.machine.processes[self._target(process, "process")].job = job

    def resume(self, thread: int) -> None:
        self._record("resume", thread)
        pid = self._target(thread, "thread")
        self.machine.processes[pid].suspended = False
        for hook in self.on_resume:
            hook(pid)

    def terminate_handle(self, process: int) -> None:
        self._record("terminate_handle", process)
        self.machine.terminate(self._target(process, "process"))

    def close_handle(self, handle: int) -> None:
        self.calls.append(("close_handle", handle))
        kind, _target = self.open_handles.pop(handle)
        job = self.jobs.get(handle)
        if kind == "job" and job is not None:
            job.closed = True
            if job.kill_on_close:
                for pid in self.job_pids(handle):
                    self.machine.terminate(pid)

    def job_pids(self, job: int) -> frozenset[int]:
        return frozenset(p.pid for p in self.machine.processes.values() if p.alive and p.job == job)

    def disarm_job(self, job: int) -> None:
        self._record("disarm_job", job)
        self.jobs[job].kill_on_close = False

    def terminate_job(self, job: int) -> None:
        self._record("terminate_job", job)
        self.jobs[job].terminated += 1
        for pid in self.job_pids(job):
            self.machine.terminate(pid)

    def post_close_to_windows_of(self, pids: frozenset[int]) -> int:
        self._record("post_close_to_windows_of", tuple(sorted(pids)))
        targets = [w.hwnd for w in self.machine.windows.values() if w.pid in pids]
        for hwnd in targets:
            self.machine.post_close(hwnd)
        return len(targets)

    def terminate_pid(self, info: ProcessInfo) -> bool:
        self.calls.append(("terminate_pid", info.pid))
        return self.machine.terminate_pid(info)

    def terminate_member(self, job: int, info: ProcessInfo) -> bool:
        self.calls.append(("terminate_member", job, info.pid))
        return self.machine.terminate_pid(info, job=job)

    def wait_exit(self, pids: frozenset[int], timeout_s: float) -> frozenset[int]:
        self.calls.append(("wait_exit", tuple(sorted(pids)), timeout_s))
        self.waits.append(timeout_s)
        return self.machine.alive(pids)

    def process_info(self, pid: int) -> ProcessInfo | None:
        return self.machine.process_info(pid)

    def agent_process(self) -> ProcessInfo:
        info = self.machine.process_info(AGENT_PID)
        assert info is not None
        return info

    def tagged_pids(self, tag: str, launch_ids: frozenset[str] | None) -> frozenset[int]:
        return frozenset(
            p.pid
            for p in self.machine.processes.values()
            if p.alive and p.launch_tag == tag and (launch_ids is None or p.launch_id in launch_ids)
        )


class FakeWindowPort:
    """`WindowPort` over a `FakeWin32`: its windows, and its processes for the guard."""

    def __init__(self, machine: FakeWin32 | None = None) -> None:
        self.machine = FakeWin32() if machine is None else machine
        self.calls: list[tuple[object, ...]] = []
        self.waits: list[float] = []

    def open_window(self, hwnd: int, pid: int, **attrs: object) -> FakeWindow:
        """A top-level window of `pid` (see `FakeWin32.open_window`)."""
        return self.machine.open_window(hwnd, pid, **attrs)

    # -- WindowPort --------------------------------------------------------------------
    def top_level_windows(self) -> list[TopLevelWindow]:
        return [
            TopLevelWindow(
                hwnd=w.hwnd,
                pid=w.pid,
                is_visible=w.visible,
                owner_hwnd=w.owner_hwnd,
                ex_style=w.ex_style,
                is_cloaked=w.cloaked,
                class_name=w.class_name,
                bounds=w.bounds,
                is_minimised=w.minimised,
                is_foreground=w.foreground,
            )
            for w in self.machine.windows.values()
        ]

    def post_close(self, hwnd: int) -> None:
        self.calls.append(("post_close", hwnd))
        self.machine.post_close(hwnd)

    def is_window(self, hwnd: int) -> bool:
        return hwnd in self.machine.windows

    def wait_windows_closed(self, hwnds: frozenset[int], timeout_s: float) -> frozenset[int]:
        self.waits.append(timeout_s)
        return frozenset(h for h in hwnds if h in self.machine.windows)

    def process_info(self, pid: int) -> ProcessInfo | None:
        return self.machine.process_info(pid)

    def terminate_pid(self, info: ProcessInfo) -> bool:
        self.calls.append(("terminate_pid", info.pid))
        return self.machine.terminate_pid(info)


CONSOLE_SESSION = SessionInfo(
    session_id=SESSION_ID, connect_state=0, session_flags=1, station_name="Console"
)


class FakeStatePort:
    """`StatePort` with scripted answers: an unlocked console session on Windows 11 with
    "Default" as the input desktop until a test changes a field. A read named in
    `failing` raises OSError."""

    def __init__(self) -> None:
        self.desktop_name: str | None = "Default"
        self.desktop_error: int | None = None
        self.session: SessionInfo | None = CONSOLE_SESSION
        self.session_id: int | None = SESSION_ID
        self.console_session_id: int | None = SESSION_ID
        self.version: tuple[int, int] | None = (10, 0)
        self.failing: set[str] = set()

    def _check(self, name: str) -> None:
        if name in self.failing:
            raise OSError(5, f"{name} failed (scripted)")

    def input_desktop_name(self) -> tuple[str | None, int | None]:
        self._check("input_desktop_name")
        return self.desktop_name, self.desktop_error

    def session_info(self) -> SessionInfo | None:
        self._check("session_info")
        return self.session

    def own_session_id(self) -> int | None:
        self._check("own_session_id")
        return self.session_id

    def active_console_session_id(self) -> int | None:
        self._check("active_console_session_id")
        return self.console_session_id

    def os_version(self) -> tuple[int, int] | None:
        self._check("os_version")
        return self.version
