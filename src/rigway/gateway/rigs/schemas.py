"""Public shapes of the rigs API."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from rigway.gateway.validation import StoredText
from rigway.protocol.messages import DisplayInfo
from rigway.protocol.ops import DesktopState


class DisplayOut(BaseModel):
    """One monitor, in native capture pixels; `scale` is its DPI scale (1.0 = 96 dpi)."""

    x: int
    y: int
    width: int
    height: int
    scale: float
    primary: bool


def displays_out(displays: Sequence[DisplayInfo]) -> list[DisplayOut]:
    return [DisplayOut.model_validate(display.model_dump()) for display in displays]


class RigOut(BaseModel):
    id: str
    name: str
    online: bool
    gpu: str
    os: str
    api_access_enabled: bool
    native_width: int | None
    native_height: int | None
    agent_version: str | None
    last_seen_at: datetime | None
    active_session_id: str | None
    # Whether the desktop can be driven now, as its host last said; None while offline.
    desktop_state: DesktopState | None
    # The monitors, as the host told them at connect; [] while offline.
    displays: list[DisplayOut] = Field(default_factory=list)


class RigListOut(BaseModel):
    rigs: list[RigOut]


class PairIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    code: StoredText = Field(min_length=1, max_length=64)
    name: StoredText = Field(min_length=1, max_length=200)
    os: StoredText = Field(default="", max_length=128)
    gpu: StoredText = Field(default="", max_length=128)


class PairOut(BaseModel):
    rig_id: str
    rig_token: str


class PairingCodeOut(BaseModel):
    code: str
    expires_at: datetime


class UpdateRigIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: StoredText | None = Field(default=None, min_length=1, max_length=200)
    api_access_enabled: bool | None = None


class WakeOut(BaseModel):
    ok: bool
    rig_id: str
    via: str | None = None
    already_online: bool = False
