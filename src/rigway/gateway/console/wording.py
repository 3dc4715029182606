"""The console's words for the codes the API speaks: one mapping, used by every page
(as the Jinja filters `end_reason` and `session_status`) and by the live JSON, so a
code reads the same everywhere. The codes themselves are the contract of docs/api.md;
these words are only how the console says them to an owner."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "CONTROL_WORDS",
    "END_REASON_WORDS",
    "SCOPE_WORDS",
    "SESSION_MODE_WORDS",
    "SESSION_STATUS_WORDS",
    "control_words",
    "end_reason_words",
    "session_mode_words",
    "session_status_words",
]

END_REASON_WORDS: Mapping[str, str] = {
    "client": "ended by the agent",
    "owner_kill": "ended by the owner",
    "idle_timeout": "ended after sitting idle",
    "max_age": "ended at the longest length a session may run",
    "timeout": "ended: the rig did not come back after the gateway restarted",
    "host_gone": "ended: the rig went offline",
    "unpaired": "ended: the rig was unpaired",
}

SESSION_STATUS_WORDS: Mapping[str, str] = {
    "active": "live",
    "ended": "ended",
    "failed": "failed to start",
}

SESSION_MODE_WORDS: Mapping[str, str] = {
    "desktop": "the whole desktop",
    "app": "only the apps it launched",
}

# Who drives a live session's input (the Session's `control`).
CONTROL_WORDS: Mapping[str, str] = {
    "api": "the agent, through the API",
    "human": "a person who took control",
}


# In the order the key form lists them; every scope of docs/api.md (API keys).
SCOPE_WORDS: Mapping[str, str] = {
    "rigs:read": "list and read rigs",
    "rigs:wake": "wake offline rigs",
    "sessions": "start and end sessions; screenshots, observe, targets",
    "input": "click, type, scroll, drag",
    "apps": "launch and close apps",
    "stream": "watch live video",
}


def end_reason_words(code: str | None) -> str:
    if code is None:
        return "—"
    # A code added to the API before its words here still reads, if less kindly.
    return END_REASON_WORDS.get(code, code.replace("_", " "))


def session_status_words(code: str) -> str:
    return SESSION_STATUS_WORDS.get(code, code.replace("_", " "))


def session_mode_words(code: str) -> str:
    return SESSION_MODE_WORDS.get(code, code.replace("_", " "))


def control_words(code: str) -> str:
    return CONTROL_WORDS.get(code, code.replace("_", " "))
