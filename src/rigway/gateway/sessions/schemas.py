"""Public shapes of the sessions API."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator
from pydantic.config import JsonDict

from rigway.gateway.rigs.schemas import DisplayOut
from rigway.protocol.ops import DesktopState

SessionMode = Literal["desktop", "app"]
SessionStatus = Literal["active", "ended", "failed"]
# Who drives the session's input now: the API caller, or a human who took control.
SessionControl = Literal["api", "human"]
EndReason = Literal[
    "client", "owner_kill", "idle_timeout", "max_age", "timeout", "host_gone", "unpaired"
]


def _drop_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class CreateSessionIn(BaseModel):
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [{"rig_id": "rig_5d2c9e71a0b4c3d2e1f00a9b", "mode": "desktop"}],
        },
    )

    rig_id: str = Field(min_length=1, max_length=64, description="The rig to drive.")
    mode: SessionMode = Field(
        default="desktop",
        description=(
            "`desktop`: the whole desktop. `app`: only the windows of the apps the "
            "session launches (`/app/launch`): screen operations cover its frontmost "
            "launched-app window, other windows' pixels are blacked out. Refused with "
            "`403 mode_not_allowed` where the rig's owner allows only `app`."
        ),
    )
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

    record: bool = Field(
        default=False,
        description=(
            "Keep a recording (frames served, input batches with receipts, targets, "
            "timings) readable at `GET /v1/sessions/{id}/recording`. Refused with "
            "`403 recording_not_allowed` where the rig's owner does not allow recordings."
        ),
    )

    @field_validator("idle_timeout_seconds", mode="before")
    @classmethod
    def _refuse_null(cls, value: object) -> object:
        # Runs only on a value the caller sent; the absent field's None skips it.
        if value is None:
            raise ValueError("an integer from 60 to 3600, or leave the field out")
        return value


SESSION_EXAMPLE: JsonDict = {
    "session_id": "ses_0f3c6a2b9d1e4f5a6b7c8d9e",
    "rig_id": "rig_5d2c9e71a0b4c3d2e1f00a9b",
    "mode": "desktop",
    "status": "active",
    "started_at": "2026-11-25T21:00:00Z",
    "ended_at": None,
    "ended_reason": None,
    "billed_minutes": 1,
    "duration_seconds": 42,
    "last_activity_at": "2026-11-25T21:00:40Z",
    "action_count": 3,
    "idle_timeout_seconds": 900,
    "capture_mode": "sim",
    "native_width": 1280,
    "native_height": 800,
    "desktop_state": "normal",
    "record": False,
    "control": "api",
    "owner_active": False,
    "app_window": None,
    "displays": [{"x": 0, "y": 0, "width": 1280, "height": 800, "scale": 1.0, "primary": True}],
}


class SessionOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [SESSION_EXAMPLE]})
    session_id: str = Field(description="The session's id.")
    rig_id: str = Field(description="The rig it drives.")
    mode: SessionMode = Field(description="`desktop` or `app`, as created.")
    status: SessionStatus = Field(
        description="`active`, `ended`, or `failed` (the host never acknowledged its start)."
    )
    started_at: datetime = Field(description="When it started.")
    ended_at: datetime | None = Field(description="When it ended; null while active.")
    ended_reason: EndReason | None = Field(
        description=(
            "Why it ended: `client`, `idle_timeout`, `max_age`, `host_gone`, `timeout` "
            "(orphan cleanup at gateway start), `owner_kill`, `unpaired`; null while active."
        )
    )
    billed_minutes: int = Field(
        description=(
            "Whole minutes of wall clock from start to end (or to now), rounded up, at "
            "least 1; 0 for a failed session."
        )
    )
    duration_seconds: int = Field(description="Seconds from start to end, or to now.")
    last_activity_at: datetime = Field(
        description="The last screenshot, observe, input or wait (what the idle timer counts)."
    )
    action_count: int = Field(description="Input events plus app operations.")
    idle_timeout_seconds: int = Field(
        description="It ends `idle_timeout` after this long without activity."
    )
    capture_mode: str | None = Field(
        description="How the host captures: `sim`, `x11-damage`, `dxgi`, `gdi`…"
    )
    native_width: int | None = Field(description="The rig's desktop width in native pixels.")
    native_height: int | None = Field(description="The rig's desktop height in native pixels.")
    desktop_state: DesktopState | None = Field(
        description=(
            "The rig's desktop state (`normal`, `locked`, …) while the session is active "
            "and its host connected; null otherwise."
        )
    )
    displays: list[DisplayOut] = Field(
        default_factory=list,
        description="The rig's monitors while active and its host connected; [] otherwise.",
    )
    record: bool = Field(default=False, description="Whether the session is recorded.")
    control: SessionControl = Field(
        default="api",
        description=(
            "`api` while API input drives the rig; `human` while a person who took "
            "control does (API input then answers `409 human_in_control`)."
        ),
    )
    owner_active: bool = Field(
        default=False,
        description=(
            "True while the rig's owner uses its own keyboard or mouse: API input "
            "answers `409 owner_active` until the rig has rested for the owner's delay."
        ),
    )
    app_window: list[int] | None = Field(
        default=None,
        description=(
            "`app` mode: `[x, y, w, h]` (native pixels) of the frontmost window of the "
            "session's launched apps, which screen operations cover; null while there "
            "is none, and always in `desktop` mode."
        ),
    )


class SessionListOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"sessions": [SESSION_EXAMPLE]}]})
    sessions: list[SessionOut] = Field(description="The active sessions, oldest first.")
