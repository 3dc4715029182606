"""Public shapes of the rigs API."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from rigway.gateway.validation import StoredText
from rigway.protocol.ops import DesktopState


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
