"""Apps launched for a session on Windows, each in a Job Object, killed as a whole.

`JobAppTracker` is the Windows `AppTracker` (see `agent/apps.py`), pure logic over a
`JobPort` that the binding (`_jobs.py`) implements with CreateProcessW and the Job
Object API, and the tests with a fake.

Launch, in the one order that leaves no gap (https://devblogs.microsoft.com/oldnewthing/20131209-00/?p=2433):
create the process suspended, create a job with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE (and
never a breakaway limit), assign the process, resume its thread. The process runs no
instruction outside the job, so every descendant it starts is in the job too. A failure
at any step terminates the suspended process and closes every handle: nothing is left
half started. The child's environment carries `RIGWAY_LAUNCH_TAG` (one per tracker) and
`RIGWAY_LAUNCH_ID` (one per launch), as on POSIX.

Kill: WM_CLOSE to the top-level windows of the job's processes and of tagged escapees,
a grace period that ends as soon as they have all exited (a wait on the processes, not
a sleep), then TerminateJobObject, then the escapees one by one, twice (the second
round catches what started during the first). Every process is vetted by
`protect.is_protected` first; when a job holds a process the guard spares, the job is
not terminated wholesale (its other members are, one by one) and its kill-on-close
limit is lifted before the handle is closed.

What a job cannot hold, and so what a kill cannot reach:
- single-instance apps (Chrome, Edge, Explorer, Windows 11 Notepad) hand the request to
  a copy already running and the launched process exits at once. That copy is not in
  the job, has not the tag and is the user's: it is never killed, and `kill` returns the
  launched pid (which has ended) without claiming anything else;
- processes started on the app's behalf by a broker (COM/DCOM servers, Store/UWP
  activations, WMI's Win32_Process.Create) are children of system services;
- an app that elevates through UAC starts its elevated copy from the AppInfo service.
The tag sweep finds such processes only when they inherited the environment.

Launched pids stay valid while tracked: the tracker holds each launched process's
handle, and Windows does not reuse a pid while a handle to its process is open.

The layouts and constants the binding passes are in `job_types`, how a launch is
spelled (program, command line, environment block) in `launch`.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from rigway.agent.apps import (
    KILL_WAIT_S,
    TERMINATE_GRACE_S,
    LaunchError,
    UnknownAppError,
)
from rigway.agent.backends.windows.job_types import CONSTANTS
from rigway.agent.backends.windows.launch import build_command_line, child_environment
from rigway.agent.backends.windows.protect import GuardContext, ProcessInfo, is_protected

__all__ = [
    # Re-exported for the launcher's binding, which reads its access rights here.
    "CONSTANTS",
    "JobAppTracker",
    "JobPort",
    "SuspendedProcess",
]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SuspendedProcess:
    """A process created suspended: its pid and the two handles CreateProcessW returned."""

    pid: int
    process_handle: int
    thread_handle: int


class JobPort(Protocol):
    """The Win32 calls `JobAppTracker` needs. Handles are ints. Calls that fail raise
    OSError unless their doc says otherwise."""

    def resolve_executable(self, path: str) -> str:
        """`find_executable` over the real PATH, PATHEXT and file system."""
        ...

    def create_process_suspended(
        self, executable: str, command_line: str, env: Mapping[str, str], cwd: str | None
    ) -> SuspendedProcess:
        """CreateProcessW with `CREATION_FLAGS` and `environment_block(env)`."""
        ...

    def create_kill_on_close_job(self) -> int:
        """A new unnamed, non-inheritable job with `job_limits(kill_on_close=True)`."""
        ...

    def assign(self, job: int, process: int) -> None: ...

    def resume(self, thread: int) -> None: ...

    def terminate_handle(self, process: int) -> None:
        """TerminateProcess on a handle the tracker holds (a process it created)."""
        ...

    def close_handle(self, handle: int) -> None: ...

    def job_pids(self, job: int) -> frozenset[int]:
        """Pids of the processes in the job now (JobObjectBasicProcessIdList)."""
        ...

    def disarm_job(self, job: int) -> None:
        """Lift kill-on-close, so closing the handle spares what is left in the job."""
        ...

    def terminate_job(self, job: int) -> None: ...

    def post_close_to_windows_of(self, pids: frozenset[int]) -> int:
        """WM_CLOSE to every top-level window these processes own; how many got one."""
        ...

    def terminate_pid(self, info: ProcessInfo) -> bool:
        """TerminateProcess on the process `info` describes, only if its pid still names
        that process (same creation time). False when it did not (gone, reused,
        access denied); never raises."""
        ...

    def terminate_member(self, job: int, info: ProcessInfo) -> bool:
        """`terminate_pid`, only if that process is in `job` now (IsProcessInJob on the
        handle that terminates it); never raises."""
        ...

    def wait_exit(self, pids: frozenset[int], timeout_s: float) -> frozenset[int]:
        """Wait until these processes have all exited or `timeout_s` passed; returns
        those still running."""
        ...

    def process_info(self, pid: int) -> ProcessInfo | None:
        """The guard's facts of a process; None when no process has this pid."""
        ...

    def agent_process(self) -> ProcessInfo:
        """The guard's facts of the agent's own process."""
        ...

    def tagged_pids(self, tag: str, launch_ids: frozenset[str] | None) -> frozenset[int]:
        """Live processes whose environment carries `tag` (and, unless None, one of
        `launch_ids`)."""
        ...


@dataclass(frozen=True, slots=True)
class _Launched:
    pid: int
    process_handle: int
    job_handle: int
    launch_id: str


@dataclass(frozen=True, slots=True)
class _Vetted:
    allowed: dict[int, ProcessInfo]
    refused: frozenset[int]


class JobAppTracker:
    """Launches apps into Job Objects and kills them, and only them, on request.

    All calls block (a kill may wait seconds for windows to close): the agent runs
    them in a worker thread. One lock serialises them."""

    def __init__(
        self,
        port: JobPort,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        close_grace_s: float = TERMINATE_GRACE_S,
        kill_wait_s: float = KILL_WAIT_S,
    ) -> None:
        # env None: apps inherit the agent's environment as it is at launch time.
        self._port = port
        self._env = env
        self._cwd = cwd
        self._grace_s = close_grace_s
        self._kill_wait_s = kill_wait_s
        self._tag = uuid.uuid4().hex
        self._apps: dict[int, _Launched] = {}
        self._agent: ProcessInfo | None = None
        self._lock = threading.Lock()

    @property
    def tag(self) -> str:
        """The `RIGWAY_LAUNCH_TAG` value every process started by this tracker carries."""
        return self._tag

    @property
    def launched_pids(self) -> list[int]:
        """Launched pids not yet killed, in launch order (exited ones included)."""
        with self._lock:
            return list(self._apps)

    def launch(self, path: str, args: Sequence[str]) -> int:
        """Start `path` (absolute, or a bare name looked up on PATH) with `args`."""
        executable = self._port.resolve_executable(path)
        command_line = build_command_line(executable, args)
        launch_id = uuid.uuid4().hex
        base_env = os.environ if self._env is None else self._env
        env = child_environment(base_env, self._tag, launch_id)
        try:
            process = self._port.create_process_suspended(executable, command_line, env, self._cwd)
        except OSError as exc:
            raise LaunchError(f"{path} could not be started: {_reason(exc)}") from exc
        job = self._contain(path, process)
        with self._lock:
            self._apps[process.pid] = _Launched(process.pid, process.process_handle, job, launch_id)
        return process.pid

    def _contain(self, path: str, process: SuspendedProcess) -> int:
        """Job, assign, resume; on any failure the suspended process is ended."""
        job: int | None = None
        try:
            job = self._port.create_kill_on_close_job()
            self._port.assign(job, process.process_handle)
            self._port.resume(process.thread_handle)
        except BaseException as exc:
            self._abandon(process, job)
            if isinstance(exc, OSError):
                raise LaunchError(f"{path} could not be started in a job: {_reason(exc)}") from exc
            raise
        self._close_quietly(process.thread_handle)
        return job

    def _abandon(self, process: SuspendedProcess, job: int | None) -> None:
        try:
            self._port.terminate_handle(process.process_handle)
        except OSError:
            _log.exception("could not terminate the suspended pid %d", process.pid)
        for handle in (process.thread_handle, process.process_handle, job):
            if handle is not None:
                self._close_quietly(handle)

    def kill(self, pid: int | None) -> list[int]:
        """Kill one launched app's job and escapees (or every app's, for None).

        Returns the launched pids now ended and forgotten, including any that had
        exited on their own; a launched process still running afterwards stays tracked
        and is left out."""
        with self._lock:
            if pid is None:
                apps = list(self._apps.values())
            elif pid in self._apps:
                apps = [self._apps[pid]]
            else:
                raise UnknownAppError(pid)
            launch_ids = None if pid is None else frozenset({apps[0].launch_id})
            return self._kill_apps(apps, launch_ids)

    def kill_all(self) -> list[int]:
        """Session end: every launched app and everything it started."""
        return self.kill(None)

    def owned_pids(self) -> frozenset[int]:
        """Live processes `kill_all` would end now (guarded ones left out): the jobs'
        members and every process carrying this tracker's tag."""
        with self._lock:
            context = self._context_locked()
            members = self._members_locked(list(self._apps.values()))
            tagged = self._port.tagged_pids(self._tag, None)
            return frozenset(self._vet(members | tagged, context).allowed)

    def guard_context(self) -> GuardContext:
        """The guard's view now: who the agent is and what this tracker started."""
        with self._lock:
            return self._context_locked()

    def _kill_apps(self, apps: list[_Launched], launch_ids: frozenset[str] | None) -> list[int]:
        context = self._context_locked()
        polite = self._vet(self._members_locked(apps) | self._tagged(launch_ids), context)
        targets = frozenset(polite.allowed)
        if targets and self._port.post_close_to_windows_of(targets) > 0:
            self._port.wait_exit(targets, self._grace_s)
        for _round in range(2):  # the second catches what started during the first
            forced = self._force(apps, launch_ids)
            if forced:
                self._port.wait_exit(forced, self._kill_wait_s)
        return self._forget_ended(apps)

    def _force(self, apps: list[_Launched], launch_ids: frozenset[str] | None) -> frozenset[int]:
        context = self._context_locked()
        forced: set[int] = set()
        for app in apps:
            members = self._port.job_pids(app.job_handle)
            if not members:
                continue
            vetted = self._vet(members, context)
            if vetted.refused or not self._terminate_job(app):
                # The job also holds a process the guard spares: one by one instead,
                # each still a member when it is hit (the guard let it pass as one).
                self._terminate_members(app.job_handle, vetted.allowed.values())
            forced |= vetted.allowed.keys()
        escapees = self._vet(self._tagged(launch_ids) - forced, context).allowed
        self._terminate_each(escapees.values())
        return frozenset(forced | escapees.keys())

    def _terminate_job(self, app: _Launched) -> bool:
        try:
            self._port.terminate_job(app.job_handle)
        except OSError:
            _log.exception("could not terminate the job of pid %d", app.pid)
            return False
        return True

    def _terminate_each(self, infos: Iterable[ProcessInfo]) -> None:
        for info in infos:
            if not self._port.terminate_pid(info):
                _log.info("pid %d (%s) was not terminated", info.pid, info.name)

    def _terminate_members(self, job: int, infos: Iterable[ProcessInfo]) -> None:
        for info in infos:
            if not self._port.terminate_member(job, info):
                _log.info("job member pid %d (%s) was not terminated", info.pid, info.name)

    def _forget_ended(self, apps: list[_Launched]) -> list[int]:
        running = self._port.wait_exit(frozenset(app.pid for app in apps), 0.0)
        ended = []
        for app in apps:
            if app.pid in running:
                _log.warning("launched pid %d is still running after its kill", app.pid)
                continue
            if self._port.job_pids(app.job_handle):
                # Only spared (or unkillable) members are left: closing the last handle
                # of a kill-on-close job would end them after all.
                self._port.disarm_job(app.job_handle)
            self._close_quietly(app.job_handle)
            self._close_quietly(app.process_handle)
            del self._apps[app.pid]
            ended.append(app.pid)
        return ended

    def _tagged(self, launch_ids: frozenset[str] | None) -> frozenset[int]:
        return self._port.tagged_pids(self._tag, launch_ids)

    def _members_locked(self, apps: list[_Launched]) -> frozenset[int]:
        members: set[int] = set()
        for app in apps:
            members |= self._port.job_pids(app.job_handle)
        return frozenset(members)

    def _context_locked(self) -> GuardContext:
        if self._agent is None:
            self._agent = self._port.agent_process()
        agent = self._agent
        launched = set(self._apps) | self._members_locked(list(self._apps.values()))
        return GuardContext(
            agent_pid=agent.pid,
            agent_ancestor_pids=frozenset(agent.ancestor_pids),
            session_id=agent.session_id,
            user_sid=agent.user_sid,
            launched_pids=frozenset(launched),
            launch_tag=self._tag,
        )

    def _vet(self, pids: frozenset[int], context: GuardContext) -> _Vetted:
        """Each pid's facts, split into those the guard lets us kill and those it
        spares (pids that are gone meanwhile are in neither)."""
        allowed: dict[int, ProcessInfo] = {}
        refused: set[int] = set()
        for pid in sorted(pids):
            info = self._port.process_info(pid)
            if info is None:
                continue
            reason = is_protected(info, context)
            if reason is None:
                allowed[pid] = info
            else:
                _log.warning("not killing pid %d (%s): %s", pid, info.name, reason)
                refused.add(pid)
        return _Vetted(allowed, frozenset(refused))

    def _close_quietly(self, handle: int) -> None:
        try:
            self._port.close_handle(handle)
        except OSError:
            _log.exception("could not close handle %#x", handle)


def _reason(exc: OSError) -> str:
    return exc.strerror if exc.strerror is not None else str(exc)
