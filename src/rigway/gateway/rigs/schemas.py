"""Public shapes of the rigs API."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from rigway.gateway.validation import StoredText
from rigway.protocol.messages import DisplayInfo
from rigway.protocol.ops import DesktopState


class DisplayOut(BaseModel):
    """One monitor, in native capture pixels; `scale` is its DPI scale (1.0 = 96 dpi)."""

    x: int = Field(description="Its left edge in native capture pixels.")
    y: int = Field(description="Its top edge in native capture pixels.")
    width: int = Field(description="Its width in native capture pixels.")
    height: int = Field(description="Its height in native capture pixels.")
    scale: float = Field(description="Its DPI scale: 1.0 is 96 dpi.")
    primary: bool = Field(description="Whether it is the primary monitor.")


def displays_out(displays: Sequence[DisplayInfo]) -> list[DisplayOut]:
    return [DisplayOut.model_validate(display.model_dump()) for display in displays]


RIG_EXAMPLE: JsonDict = {
    "id": "rig_5d2c9e71a0b4c3d2e1f00a9b",
    "name": "studio-pc",
    "online": True,
    "gpu": "",
    "os": "Linux",
    "api_access_enabled": True,
    "native_width": 1280,
    "native_height": 800,
    "agent_version": "0.1.0",
    "last_seen_at": "2026-11-25T21:00:00Z",
    "active_session_id": None,
    "desktop_state": "normal",
    "displays": [{"x": 0, "y": 0, "width": 1280, "height": 800, "scale": 1.0, "primary": True}],
    "app_mode_only": False,
    "owner_idle_s": 10,
    "recordings_allowed": True,
}

# The owner-idle delay's bounds: 0 turns the owner-presence pause off, an hour at most.
OWNER_IDLE_MIN_S = 0
OWNER_IDLE_MAX_S = 3600


class RigOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [RIG_EXAMPLE]})
    id: str = Field(description="The rig's id.")
    name: str = Field(description="Its name, as paired or renamed by its owner.")
    online: bool = Field(description="Whether its agent holds a host link to the gateway now.")
    gpu: str = Field(description="Its GPU, as its agent last reported it (may be empty).")
    os: str = Field(description="Its operating system, as its agent last reported it.")
    api_access_enabled: bool = Field(
        description="Whether API keys may drive it (else 403 api_access_disabled)."
    )
    native_width: int | None = Field(description="Its desktop's width in native pixels.")
    native_height: int | None = Field(description="Its desktop's height in native pixels.")
    agent_version: str | None = Field(description="The version of its agent.")
    last_seen_at: datetime | None = Field(description="When its agent was last heard from.")
    active_session_id: str | None = Field(
        description="The session driving it now; null when none (one at a time per rig)."
    )
    desktop_state: DesktopState | None = Field(
        description=(
            "Whether its desktop can be driven now, as its host last said (`normal`, "
            "`locked`, `secure_desktop`, `screensaver`, `no_display`, `unknown`); null "
            "while offline."
        )
    )
    displays: list[DisplayOut] = Field(
        default_factory=list,
        description="Its monitors, as its agent last told them; [] while offline.",
    )
    app_mode_only: bool = Field(
        description=(
            "The owner allows API sessions only in `app` mode: a `desktop` session is "
            "403 mode_not_allowed."
        ),
    )
    owner_idle_s: int = Field(
        description=(
            "Seconds the rig's own keyboard and mouse must rest before API input is "
            "accepted again (409 owner_active meanwhile); 0: never paused for the owner."
        ),
    )
    recordings_allowed: bool = Field(
        description="The owner allows recorded sessions (else 403 recording_not_allowed).",
    )


class RigListOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"rigs": [RIG_EXAMPLE]}]})
    rigs: list[RigOut] = Field(description="The account's rigs.")


class PairIn(BaseModel):
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [{"code": "K7Q2M-9XDPF", "name": "studio-pc", "os": "Linux", "gpu": ""}]
        },
    )

    code: StoredText = Field(
        min_length=1,
        max_length=64,
        description="A pairing code from the owner's console: one-time, valid 10 minutes.",
    )
    name: StoredText = Field(min_length=1, max_length=200, description="The rig's name.")
    os: StoredText = Field(default="", max_length=128, description="Its operating system.")
    gpu: StoredText = Field(default="", max_length=128, description="Its GPU.")


class PairOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"rig_id": "rig_5d2c9e71a0b4c3d2e1f00a9b", "rig_token": "rgwr_9b1f…"}]
        }
    )
    rig_id: str = Field(description="The new rig's id.")
    rig_token: str = Field(
        description="The rig's token: the agent connects with it. Shown only here."
    )


class PairingCodeOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"code": "K7Q2M-9XDPF", "expires_at": "2026-11-25T21:10:00Z"}]
        }
    )
    code: str = Field(description="A one-time code for `rigway agent pair`.")
    expires_at: datetime = Field(description="When it stops working (10 minutes on).")


class UpdateRigIn(BaseModel):
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"name": "studio-pc", "api_access_enabled": True},
                {"app_mode_only": True, "owner_idle_s": 30, "recordings_allowed": False},
            ]
        },
    )

    name: StoredText | None = Field(
        default=None, min_length=1, max_length=200, description="A new name."
    )
    api_access_enabled: bool | None = Field(
        default=None, description="Whether API keys may drive the rig."
    )
    app_mode_only: bool | None = Field(
        default=None, description="Allow API sessions only in `app` mode."
    )
    owner_idle_s: int | None = Field(
        default=None,
        ge=OWNER_IDLE_MIN_S,
        le=OWNER_IDLE_MAX_S,
        description=(
            "Seconds (0 to 3600) the rig's own keyboard and mouse must rest before API "
            "input is accepted again; 0 turns the pause off. The session running on "
            "the rig takes a new value at once."
        ),
    )
    recordings_allowed: bool | None = Field(
        default=None, description="Allow sessions that record (`record: true`)."
    )


class WakeOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"ok": True, "rig_id": "rig_5d2c9e71a0b4c3d2e1f00a9b", "via": "gateway"}]
        }
    )
    ok: bool = Field(description="Always true.")
    rig_id: str = Field(description="The rig.")
    via: str | None = Field(
        default=None,
        description=(
            "The id of the online rig on the same LAN that sent the magic packet, or "
            "`gateway`; absent when the rig was already online."
        ),
    )
    already_online: bool = Field(
        default=False, description="True when the rig was online: nothing was sent."
    )
