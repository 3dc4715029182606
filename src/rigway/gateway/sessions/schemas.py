"""Public shapes of the sessions API."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

from rigway.gateway.rigs.schemas import DisplayOut
from rigway.protocol.ops import DesktopState

SessionMode = Literal["desktop", "app"]
SessionStatus = Literal["active", "ended", "failed"]
EndReason = Literal[
    "client", "owner_kill", "idle_timeout", "max_age", "timeout", "host_gone", "unpaired"
]


def _drop_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class CreateSessionIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    rig_id: str = Field(min_length=1, max_length=64)
    mode: SessionMode = "desktop"
    # Absent: the gateway's configured default (settings.default_idle_timeout_s), which
    # a fixed default here would override. None stands for "absent" only: a null sent
    # is refused like any other non-integer, and the schema shows a plain integer.
    idle_timeout_seconds: Annotated[
        int | None,
        Field(ge=60, le=3600),
        WithJsonSchema({"type": "integer", "minimum": 60, "maximum": 3600}),
    ] = Field(
        default=None,
        description="60 to 3600; absent: the gateway's default (900 unless configured)",
        json_schema_extra=_drop_default,
    )

    @field_validator("idle_timeout_seconds", mode="before")
    @classmethod
    def _refuse_null(cls, value: object) -> object:
        # Runs only on a value the caller sent; the absent field's None skips it.
        if value is None:
            raise ValueError("an integer from 60 to 3600, or leave the field out")
        return value


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
    # The rig's desktop now, while active and its host is connected; else None.
    desktop_state: DesktopState | None
    # The rig's monitors, while active and its host is connected; else [].
    displays: list[DisplayOut] = Field(default_factory=list)


class SessionListOut(BaseModel):
    sessions: list[SessionOut]
