"""The parts of console pages that change while an owner watches, as one flat map of
element key → text. Pages render their first values from this map and `console.js`
polls `/console/live.json` for the same map, so the first paint and every refresh
say the same thing in the same words.

Keys: `rig:<id>:state` ("online"/"offline"), `rig:<id>:last_seen`,
`rig:<id>:session` ("in session"/""), `session:<id>:status`, `session:<id>:billed_minutes`,
`session:<id>:actions`, `session:<id>:duration`, `session:<id>:owner` ("using the
rig" while the owner's own keyboard or mouse pauses API input, else "").

"Last seen" of an online rig is the gateway's now: the host link answers heartbeats
and is closed after three missed ones, so a rig shown online was heard within that
window. An offline rig shows when its agent last said hello.
"""

from __future__ import annotations

from datetime import UTC, datetime

from rigway.gateway.console.wording import end_reason_words, session_status_words
from rigway.gateway.rigs.schemas import RigOut
from rigway.gateway.sessions.schemas import SessionOut

__all__ = ["OWNER_ACTIVE_WORDS", "duration_words", "rig_values", "session_values", "when"]

# What the live sessions list says while the owner uses the rig (API input waits).
OWNER_ACTIVE_WORDS = "using the rig"


def when(value: datetime | None) -> str:
    if value is None:
        return "—"
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration_words(seconds: int) -> str:
    hours, rest = divmod(max(0, seconds), 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {seconds:02d} s"
    return f"{seconds} s"


def rig_values(rig: RigOut, now: datetime) -> dict[str, str]:
    prefix = f"rig:{rig.id}"
    return {
        f"{prefix}:state": "online" if rig.online else "offline",
        f"{prefix}:last_seen": when(now if rig.online else rig.last_seen_at),
        f"{prefix}:session": "in session" if rig.active_session_id is not None else "",
    }


def session_values(session: SessionOut) -> dict[str, str]:
    prefix = f"session:{session.session_id}"
    status = (
        session_status_words(session.status)
        if session.ended_reason is None
        else end_reason_words(session.ended_reason)
    )
    return {
        f"{prefix}:status": status,
        f"{prefix}:billed_minutes": str(session.billed_minutes),
        f"{prefix}:actions": str(session.action_count),
        f"{prefix}:duration": duration_words(session.duration_seconds),
        f"{prefix}:owner": OWNER_ACTIVE_WORDS if session.owner_active else "",
    }
