"""The public shape of a takeover."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["TakeoverOut"]


class TakeoverOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "connect_url": "wss://rigway.example.com/v1/takeover/signal?token=eyJ…",
                    "viewer_url": "https://rigway.example.com/v1/takeover/view?token=eyJ…",
                    "expires_at": "2026-11-25T22:00:00Z",
                }
            ]
        }
    )
    connect_url: str = Field(
        description=(
            "The takeover's signaling WebSocket with its one-time token: the page at "
            "`viewer_url` uses it. Control passes to the person once its offer is answered."
        )
    )
    viewer_url: str = Field(
        description="The page a person opens to watch and drive the desktop, then hand back."
    )
    expires_at: datetime = Field(description="When the token expires (unused).")
