"""Message shapes of the host link, version 1.

Envelopes (field `t`):
- `hello` (agent → gateway, first frame) and `welcome` (the gateway's answer);
- `req` / `res`: a request with an `id`, an operation name `op` (`topic/verb`), a
  relative deadline and a body; the reply carries the same `id`. Either side may send
  requests: the gateway asks for screens and input, the agent reports owner kills.
- `note`: a one-way message with an operation name `op` and a body, answered by
  nothing (the agent's `desktop/state` and `desktop/displays` changes). A peer drops a
  note it does not know; a gateway that predates notes ignores the `t` it does not know.
- `ping` / `pong`: heartbeats, sent by both sides.

Operation bodies live in `rigway.protocol.ops`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rigway.protocol.displays import MAX_DISPLAYS as MAX_DISPLAYS
from rigway.protocol.displays import DisplayInfo as DisplayInfo
from rigway.protocol.ops import DesktopState

PROTOCOL_VERSION = 1


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Hello(_Message):
    t: Literal["hello"] = "hello"
    protocol: int
    agent_version: str = Field(max_length=64)
    os: str = Field(default="", max_length=128)
    gpu: str = Field(default="", max_length=128)
    backend: str = Field(default="", max_length=32)
    capture_mode: str = Field(default="", max_length=32)
    native_width: int = Field(ge=1, le=65535)
    native_height: int = Field(ge=1, le=65535)
    mac: str | None = Field(
        default=None, pattern=r"^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$", max_length=17
    )
    lan: str | None = Field(default=None, max_length=64)
    # Sessions the agent still holds from before a reconnect, so the gateway can
    # tell it which of them ended while it was away.
    open_session_ids: list[str] = Field(default_factory=list, max_length=16)
    # The desktop's state at connect; later changes come as `desktop/state` notes.
    # None from an agent that does not report it.
    desktop_state: DesktopState | None = None
    # The monitors at connect (later changes come as `desktop/displays` notes); empty
    # from an agent that does not report them.
    displays: list[DisplayInfo] = Field(default_factory=list, max_length=MAX_DISPLAYS)


class Welcome(_Message):
    t: Literal["welcome"] = "welcome"
    protocol: int = PROTOCOL_VERSION
    rig_id: str
    heartbeat_interval_s: float = Field(gt=0, le=3600, allow_inf_nan=False)
    # Sessions the agent reported that are no longer active on the gateway: the agent
    # ends them locally (safety restore) right away.
    ended_session_ids: list[str] = Field(default_factory=list)


class Request(_Message):
    t: Literal["req"] = "req"
    id: str
    op: str
    deadline_ms: int = Field(ge=1)
    body: dict[str, Any] = Field(default_factory=dict)


class ReplyError(_Message):
    code: str
    detail: str = ""


class Reply(_Message):
    t: Literal["res"] = "res"
    id: str
    ok: bool
    body: dict[str, Any] = Field(default_factory=dict)
    error: ReplyError | None = None


class Note(_Message):
    t: Literal["note"] = "note"
    op: str
    body: dict[str, Any] = Field(default_factory=dict)


class Ping(_Message):
    t: Literal["ping"] = "ping"
    # Echoed back in the pong: a non-finite value could not be sent again.
    sent_at: float = Field(allow_inf_nan=False)


class Pong(_Message):
    t: Literal["pong"] = "pong"
    sent_at: float = Field(allow_inf_nan=False)
