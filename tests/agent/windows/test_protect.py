"""The protected-process guard, as a table: each row is one process and the verdict."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigway.agent.backends.windows.protect import (
    SYSTEM_SID,
    GuardContext,
    ProcessInfo,
    image_stem,
    is_protected,
)

USER_SID = "S-1-5-21-1000-2000-3000-1001"
OTHER_USER_SID = "S-1-5-21-1000-2000-3000-1002"
AGENT_PID = 500
LAUNCHER_PID = 400
ROOT_PID = 1000
TAG = "tag-1"

CONTEXT = GuardContext(
    agent_pid=AGENT_PID,
    agent_ancestor_pids=frozenset({LAUNCHER_PID, 300}),
    session_id=1,
    user_sid=USER_SID,
    launched_pids=frozenset({ROOT_PID, 1001}),
    launch_tag=TAG,
)

# A child of a launched app: may be killed. Every row below changes one fact of it.
CHILD = ProcessInfo(
    pid=2000,
    name="notepad.exe",
    session_id=1,
    user_sid=USER_SID,
    is_critical=False,
    ancestor_pids=(ROOT_PID, AGENT_PID, LAUNCHER_PID),
    launch_tag=None,
    create_time_100ns=133_000_000_000_000_000,
)

ORPHAN = replace(CHILD, ancestor_pids=(), launch_tag=None)

KILLABLE = {
    "a launched app": replace(CHILD, pid=ROOT_PID, ancestor_pids=(AGENT_PID,)),
    "a job member": replace(ORPHAN, pid=1001),
    "a child of a launched app": CHILD,
    "a grandchild of a launched app": replace(CHILD, ancestor_pids=(2000, ROOT_PID)),
    "an escapee carrying the tag": replace(ORPHAN, launch_tag=TAG),
    "a user SID in another case": replace(CHILD, user_sid=USER_SID.lower()),
    "a name only like a protected one": replace(CHILD, name="explorer2.exe"),
}

PROTECTED = {
    "the idle process": (replace(CHILD, pid=0), "idle or System"),
    "System": (replace(CHILD, pid=4, name="System"), "idle or System"),
    "the agent": (replace(CHILD, pid=AGENT_PID), "the agent itself"),
    "the agent's parent": (replace(CHILD, pid=LAUNCHER_PID), "ancestor of the agent"),
    "the agent's grandparent": (replace(CHILD, pid=300), "ancestor of the agent"),
    "another session": (replace(CHILD, session_id=2), "session 2"),
    "session 0": (replace(CHILD, session_id=0), "session 0"),
    "an unreadable session": (replace(CHILD, session_id=None), "session cannot be read"),
    "SYSTEM": (replace(CHILD, user_sid=SYSTEM_SID), "runs as SYSTEM"),
    "another user": (replace(CHILD, user_sid=OTHER_USER_SID), "another user"),
    "an unreadable user": (replace(CHILD, user_sid=None), "user cannot be read"),
    "a critical process": (replace(CHILD, is_critical=True), "critical"),
    "unreadable criticality": (replace(CHILD, is_critical=None), "critical process cannot"),
    "not ours": (ORPHAN, "not started by this session"),
    "another tracker's tag": (replace(ORPHAN, launch_tag="tag-2"), "not started"),
}

PROTECTED_IMAGE_NAMES = [
    "System",
    "Registry",
    "MemCompression",
    "smss.exe",
    "csrss.exe",
    "wininit.exe",
    "winlogon.exe",
    "services.exe",
    "lsass.exe",
    "LsaIso.exe",
    "svchost.exe",
    "fontdrvhost.exe",
    "dwm.exe",
    "LogonUI.exe",
    "consent.exe",
    "explorer.exe",
    "EXPLORER.EXE",
    "explorer",
    "C:\\Windows\\explorer.exe",
    "sihost.exe",
    "ctfmon.exe",
    "MsMpEng.exe",
]


@pytest.mark.parametrize("info", KILLABLE.values(), ids=KILLABLE.keys())
def test_process_of_this_session_may_be_killed(info: ProcessInfo) -> None:
    assert is_protected(info, CONTEXT) is None


@pytest.mark.parametrize(("info", "reason"), PROTECTED.values(), ids=PROTECTED.keys())
def test_process_outside_the_rules_is_spared_with_reason(info: ProcessInfo, reason: str) -> None:
    verdict = is_protected(info, CONTEXT)

    assert verdict is not None
    assert reason in verdict


@pytest.mark.parametrize("name", PROTECTED_IMAGE_NAMES)
def test_windows_process_name_is_spared_even_when_launched(name: str) -> None:
    verdict = is_protected(replace(CHILD, name=name), CONTEXT)

    assert verdict is not None
    assert "a Windows process" in verdict


def test_unknown_agent_session_spares_everything() -> None:
    context = replace(CONTEXT, session_id=None)

    assert is_protected(CHILD, context) == "the agent's own session or user is unknown"


def test_unknown_agent_user_spares_everything() -> None:
    context = replace(CONTEXT, user_sid=None)

    assert is_protected(CHILD, context) == "the agent's own session or user is unknown"


def test_no_tag_in_the_context_matches_no_untagged_process() -> None:
    context = replace(CONTEXT, launch_tag=None)

    assert is_protected(ORPHAN, context) == "not started by this session's apps"


def test_image_stem_drops_directory_case_and_extension() -> None:
    assert image_stem("C:\\Program Files\\App\\Tool.EXE") == "tool"
