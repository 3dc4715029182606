"""Apps launched for a session, tracked so the session can kill them, and only them.

Errors:

    LaunchError(ValueError)     the path cannot be started; the message says why
    UnknownAppError(KeyError)   a pid this tracker did not launch (or already killed)

`ProcessTracker` is the POSIX tracker, shared by every POSIX backend. Each app starts in
a session of its own (a signal aimed at the agent's process group never reaches it)
and carries two environment variables that its descendants inherit: `RIGWAY_LAUNCH_TAG`
(one uuid per tracker) and `RIGWAY_LAUNCH_ID` (one uuid per launch). A descendant that
escaped the tree (double fork + setsid, reparented to init) is still found by its
environment, so killing an app kills everything it started. Windows will do the same
with a Job Object per app behind the same `AppTracker` interface.

All calls block (a kill may wait a few seconds for a tree to exit): the agent runs them
in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import psutil

__all__ = [
    "LAUNCH_ID_ENV",
    "LAUNCH_TAG_ENV",
    "AppTracker",
    "LaunchError",
    "ProcessTracker",
    "UnknownAppError",
    "tagged_processes",
]

LAUNCH_TAG_ENV: Final = "RIGWAY_LAUNCH_TAG"
LAUNCH_ID_ENV: Final = "RIGWAY_LAUNCH_ID"
# How long a polite SIGTERM gets before SIGKILL, and how long SIGKILL then gets.
TERMINATE_GRACE_S: Final = 2.0
KILL_WAIT_S: Final = 1.0
_POLL_INTERVAL_S: Final = 0.02


class LaunchError(ValueError):
    """The path cannot be started; `str(error)` is a human reason."""


class UnknownAppError(KeyError):
    """A pid this tracker did not launch: never signalled, whatever it is."""

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.pid = pid

    def __str__(self) -> str:
        return f"pid {self.pid} was not launched by this session"


class AppTracker(Protocol):
    """What the agent needs from a platform's launched-app tracker."""

    @property
    def launched_pids(self) -> list[int]: ...

    def launch(self, path: str, args: Sequence[str]) -> int: ...

    def kill(self, pid: int | None) -> list[int]: ...

    def kill_all(self) -> list[int]: ...

    def owned_pids(self) -> frozenset[int]: ...


@dataclass(frozen=True, slots=True)
class _Launched:
    popen: subprocess.Popen[bytes]
    launch_id: str


class ProcessTracker:
    """Launches apps as real OS processes and kills their whole trees on request."""

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        terminate_grace_s: float = TERMINATE_GRACE_S,
    ) -> None:
        # env None: apps inherit the agent's environment as it is at launch time.
        self._env = env
        self._cwd = cwd
        self._grace_s = terminate_grace_s
        self._tag = uuid.uuid4().hex
        self._apps: dict[int, _Launched] = {}
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
        base_env = os.environ if self._env is None else self._env
        executable = resolve_executable(path, base_env.get("PATH"))
        launch_id = uuid.uuid4().hex
        env = {**base_env, LAUNCH_TAG_ENV: self._tag, LAUNCH_ID_ENV: launch_id}
        try:
            popen = subprocess.Popen(
                [executable, *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env=env,
                cwd=self._cwd,
            )
        except (OSError, ValueError) as exc:
            # e.g. ENOEXEC for a script without a shebang, a NUL byte in an argument.
            raise LaunchError(f"{path} could not be started: {_reason(exc)}") from exc
        with self._lock:
            self._reap_locked()
            self._apps[popen.pid] = _Launched(popen, launch_id)
        return popen.pid

    def kill(self, pid: int | None) -> list[int]:
        """Kill one launched app's tree (or every app's, for None).

        Returns the launched pids now gone and forgotten, including any that had
        already exited on their own (their escaped descendants are swept all the same).
        A root that survives SIGKILL stays tracked and is left out.
        """
        with self._lock:
            if pid is None:
                roots = list(self._apps)
            elif pid in self._apps:
                roots = [pid]
            else:
                raise UnknownAppError(pid)
            return self._kill_roots(roots, sweep_whole_tag=pid is None)

    def kill_all(self) -> list[int]:
        """Session end: every launched app and everything it started."""
        return self.kill(None)

    def owned_pids(self) -> frozenset[int]:
        """Live processes `kill_all` would signal now: every launched tree, and every
        process that carries this tracker's tag (escapees included). The session end
        asks before the kill which windows these own, and closes only those."""
        with self._lock:
            return frozenset(proc.pid for proc in self._victims(list(self._apps.values()), None))

    def reap(self) -> list[int]:
        """Collect the exit status of apps that ended (no zombies); returns their pids."""
        with self._lock:
            return self._reap_locked()

    def _reap_locked(self) -> list[int]:
        return [pid for pid, app in self._apps.items() if app.popen.poll() is not None]

    def _kill_roots(self, roots: list[int], sweep_whole_tag: bool) -> list[int]:
        apps = [self._apps[pid] for pid in roots]
        launch_ids = None if sweep_whole_tag else {app.launch_id for app in apps}
        _terminate_then_kill(self._victims(apps, launch_ids), self._grace_s)
        # A second sweep catches what forked while the first round was being signalled.
        _terminate_then_kill(self._victims(apps, launch_ids), grace_s=0.0)
        killed = []
        for pid, app in zip(roots, apps, strict=True):
            try:
                app.popen.wait(timeout=KILL_WAIT_S)
            except subprocess.TimeoutExpired:
                continue
            killed.append(pid)
            del self._apps[pid]
        return killed

    def _victims(self, apps: list[_Launched], launch_ids: set[str] | None) -> list[psutil.Process]:
        found: dict[int, psutil.Process] = {}
        for app in apps:
            for proc in _tree(app.popen):
                found.setdefault(proc.pid, proc)
        for proc in tagged_processes(self._tag, launch_ids):
            found.setdefault(proc.pid, proc)
        protected = _protected_pids()
        return [proc for pid, proc in found.items() if pid not in protected]


def resolve_executable(path: str, search_path: str | None = None) -> str:
    """The file `path` names, checked startable; raises LaunchError with the reason."""
    if path.strip() == "":
        raise LaunchError("the path is empty")
    if "\0" in path:
        raise LaunchError("the path contains a NUL byte")
    if os.sep not in path and (os.altsep is None or os.altsep not in path):
        found = shutil.which(path, path=search_path)
        if found is None:
            raise LaunchError(f"{path} was not found on PATH")
        return found
    if not os.path.isabs(path):
        raise LaunchError(f"{path} is relative: give an absolute path or a bare command name")
    if not os.path.exists(path):
        raise LaunchError(f"{path} does not exist")
    if os.path.isdir(path):
        raise LaunchError(f"{path} is a directory")
    if not os.access(path, os.X_OK):
        raise LaunchError(f"{path} is not executable")
    return path


def _reason(exc: OSError | ValueError) -> str:
    if isinstance(exc, OSError) and exc.strerror is not None:
        return exc.strerror
    return str(exc)


def _tree(popen: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """The root and its descendants, if the root's pid is still ours.

    poll() is None means the root has not been reaped, so its pid cannot have been
    reused by another process yet; once reaped, only the environment scan finds its
    descendants.
    """
    if popen.poll() is not None:
        return []
    try:
        root = psutil.Process(popen.pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _variable_as_named(environ: Mapping[str, str], name: str) -> str | None:
    return environ.get(name)


def tagged_processes(
    tag: str,
    launch_ids: Collection[str] | None,
    variable: Callable[[Mapping[str, str], str], str | None] = _variable_as_named,
) -> list[psutil.Process]:
    """Processes whose environment carries `tag` (and one of `launch_ids`, if given), the
    launch variables read with `variable` (Windows: whatever their case)."""
    matches = []
    # Other users' environments are unreadable (None): they cannot carry our tag anyway.
    for proc in psutil.process_iter(["environ"], ad_value=None):
        environ: dict[str, str] | None = proc.info["environ"]
        if environ is None or variable(environ, LAUNCH_TAG_ENV) != tag:
            continue
        if launch_ids is None or variable(environ, LAUNCH_ID_ENV) in launch_ids:
            matches.append(proc)
    return matches


def _protected_pids() -> set[int]:
    """Never signalled, whatever the tree or the environment says: init, us, our parents."""
    me = psutil.Process()
    return {0, 1, me.pid, *(parent.pid for parent in me.parents())}


def _terminate_then_kill(procs: list[psutil.Process], grace_s: float) -> None:
    if procs == []:
        return
    _send(procs, psutil.Process.terminate)
    survivors = _wait_gone(procs, grace_s)
    if survivors != []:
        _send(survivors, psutil.Process.kill)
        _wait_gone(survivors, KILL_WAIT_S)


def _send(procs: Iterable[psutil.Process], signal: Callable[[psutil.Process], None]) -> None:
    for proc in procs:
        # psutil checks the pid still names the same process before signalling it.
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            signal(proc)


def _wait_gone(procs: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Poll until every process is gone; returns those still alive at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = [proc for proc in procs if _is_alive(proc)]
        if alive == [] or time.monotonic() >= deadline:
            return alive
        time.sleep(_POLL_INTERVAL_S)


def _is_alive(proc: psutil.Process) -> bool:
    # A zombie has exited; whoever reaps it (us for a root, init for an orphan) will.
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True
