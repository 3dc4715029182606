"""The protected-process guard: which processes a kill must never touch, and why.

Every forced kill on Windows (an app's job, an escaped descendant, the owner of a
window that did not close) is vetted here first. `is_protected` answers with the
reason a process is spared, or None when it may be killed. The rules fail closed:
a fact that could not be read (a session, a user, whether the process is critical)
spares the process.

Spared, whatever else is true:
- the idle process (pid 0) and System (pid 4);
- the agent itself and its ancestors (killing the launcher or the shell that started
  the agent would take the agent with it);
- a process in another session, or running as another user (SYSTEM included);
- a critical process (`IsProcessCritical`: killing one stops Windows with a bugcheck);
- Windows' own processes by image name (`PROTECTED_NAMES`), in any case, with or
  without ".exe";
- anything this session did not start: not a launched app, not a member of one of
  its job objects, not descended from either, and not carrying its launch tag.

Pure: the facts come in as `ProcessInfo` records that a binding reads (psutil,
OpenProcess, the process token) and tests write by hand.
"""

from __future__ import annotations

import ntpath
from dataclasses import dataclass
from typing import Final, Protocol

__all__ = [
    "IDLE_PID",
    "PROTECTED_NAMES",
    "SYSTEM_PID",
    "SYSTEM_SID",
    "GuardContext",
    "ProcessInfo",
    "ProcessInspector",
    "image_stem",
    "is_protected",
]

IDLE_PID: Final = 0
SYSTEM_PID: Final = 4
# The well-known SID of the LocalSystem account.
SYSTEM_SID: Final = "S-1-5-18"

# Image names (lower case, without ".exe") of processes Windows needs to keep running:
# the session manager and logon chain, the service host, the compositor, the shell and
# the input-method and antimalware hosts. None of these is an app a session launches.
PROTECTED_NAMES: Final = frozenset(
    {
        "system",
        "registry",
        "memcompression",
        "smss",
        "csrss",
        "wininit",
        "winlogon",
        "services",
        "lsass",
        "lsaiso",
        "svchost",
        "fontdrvhost",
        "dwm",
        "logonui",
        "consent",
        "explorer",
        "sihost",
        "ctfmon",
        "msmpeng",
    }
)


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """What the guard knows of one running process.

    None in `session_id`, `user_sid` or `is_critical` means the fact could not be
    read (access denied, or the process is ending); such a process is spared.
    `ancestor_pids` runs from the parent up, cut where a parent is gone or its pid now
    names a younger process. `launch_tag` is the process's `RIGWAY_LAUNCH_TAG`
    environment value (None when absent or unreadable). `create_time_100ns` (FILETIME
    ticks) is the process's identity: a kill by pid checks it, so a pid reused since the
    record was read is never hit.
    """

    pid: int
    name: str
    session_id: int | None
    user_sid: str | None
    is_critical: bool | None
    ancestor_pids: tuple[int, ...] = ()
    launch_tag: str | None = None
    create_time_100ns: int | None = None


@dataclass(frozen=True, slots=True)
class GuardContext:
    """Who the agent is and what this session started, as of one kill.

    `launched_pids` are the live launched apps and every current member of their job
    objects (membership the kernel vouches for); `launch_tag` is the tracker's tag
    (None when nothing was launched). `session_id` and `user_sid` are the agent's own;
    None there (unreadable) spares every process."""

    agent_pid: int
    agent_ancestor_pids: frozenset[int]
    session_id: int | None
    user_sid: str | None
    launched_pids: frozenset[int] = frozenset()
    launch_tag: str | None = None


class ProcessInspector(Protocol):
    """Reads a process's facts for the guard (the bindings use psutil and the token)."""

    def process_info(self, pid: int) -> ProcessInfo | None:
        """The process's facts, or None when no process has this pid."""
        ...


def image_stem(name: str) -> str:
    """The name the table is keyed by: "C:\\Windows\\Explorer.EXE" gives "explorer"."""
    base = ntpath.basename(name).strip().lower()
    return base.removesuffix(".exe")


def is_protected(info: ProcessInfo, context: GuardContext) -> str | None:
    """Why this process must not be killed, or None when it may be."""
    for rule in (_identity_reason, _ownership_reason, _system_reason, _lineage_reason):
        reason = rule(info, context)
        if reason is not None:
            return reason
    return None


def _identity_reason(info: ProcessInfo, context: GuardContext) -> str | None:
    if info.pid in (IDLE_PID, SYSTEM_PID):
        return "the idle or System process"
    if info.pid == context.agent_pid:
        return "the agent itself"
    if info.pid in context.agent_ancestor_pids:
        return "an ancestor of the agent"
    return None


def _ownership_reason(info: ProcessInfo, context: GuardContext) -> str | None:
    if context.session_id is None or context.user_sid is None:
        return "the agent's own session or user is unknown"
    if info.session_id is None:
        return "its session cannot be read"
    if info.session_id != context.session_id:
        return f"it runs in session {info.session_id}, not the agent's ({context.session_id})"
    if info.user_sid is None:
        return "its user cannot be read"
    if info.user_sid == SYSTEM_SID:
        return "it runs as SYSTEM"
    if info.user_sid.upper() != context.user_sid.upper():
        return f"it runs as another user ({info.user_sid})"
    return None


def _system_reason(info: ProcessInfo, context: GuardContext) -> str | None:
    if info.is_critical is None:
        return "whether it is a critical process cannot be read"
    if info.is_critical:
        return "a critical process (killing it stops Windows)"
    if image_stem(info.name) in PROTECTED_NAMES:
        return f"a Windows process ({info.name})"
    return None


def _lineage_reason(info: ProcessInfo, context: GuardContext) -> str | None:
    launched = context.launched_pids
    if info.pid in launched or any(pid in launched for pid in info.ancestor_pids):
        return None
    if context.launch_tag is not None and info.launch_tag == context.launch_tag:
        return None
    return "not started by this session's apps"
