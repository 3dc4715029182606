"""Public shapes of the sessions API."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SessionMode = Literal["desktop", "app"]
SessionStatus = Literal["active", "ended", "failed"]
EndReason = Literal[
    "client", "owner_kill", "idle_timeout", "max_age", "timeout", "host_gone", "unpaired"
]


class CreateSessionIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    rig_id: str = Field(min_length=1, max_length=64)
    mode: SessionMode = "desktop"
    idle_timeout_seconds: int = Field(default=900, ge=60, le=3600)


class SessionOut(BaseModel):
    session_id: str
    rig_id: str
    mode: SessionMode
    status: SessionStatus
    started_at: datetime
    ended_at: datetime | None
    ended_reason: EndReason | None
    billed_minutes: int
    duration_seconds: int
    last_activity_at: datetime
    action_count: int
    idle_timeout_seconds: int
    capture_mode: str | None
    native_width: int | None
    native_height: int | None


class SessionListOut(BaseModel):
    sessions: list[SessionOut]
