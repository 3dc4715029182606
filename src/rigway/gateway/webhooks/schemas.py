"""Public shapes of webhook management."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from rigway.gateway.validation import StoredText

WebhookEvent = Literal["session.started", "session.ended"]
ALL_EVENTS: list[WebhookEvent] = ["session.started", "session.ended"]
_EVENTS = "The events to deliver: `session.started`, `session.ended`."
WEBHOOK_EXAMPLE: JsonDict = {
    "id": "0b9e3f6a-2c41-4d8e-9a7b-5f1e3c2d4a60",
    "url": "https://example.com/rigway-hook",
    "events": ["session.started", "session.ended"],
    "enabled": True,
    "created_at": "2026-11-25T21:00:00Z",
    "last_delivery_at": None,
    "last_status": None,
    "last_error": None,
}


class CreateWebhookIn(BaseModel):
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [{"url": "https://example.com/rigway-hook", "events": ["session.ended"]}]
        },
    )

    url: StoredText = Field(
        min_length=1,
        max_length=2048,
        description=(
            "An https URL resolving only to global unicast addresses (checked now and at "
            "every delivery)."
        ),
    )
    events: list[WebhookEvent] | None = Field(
        default=None, min_length=1, max_length=2, description=f"{_EVENTS} Absent: both."
    )


class UpdateWebhookIn(BaseModel):
    model_config = ConfigDict(
        strict=True, extra="forbid", json_schema_extra={"examples": [{"enabled": False}]}
    )

    enabled: bool | None = Field(default=None, description="Whether deliveries are made.")
    events: list[WebhookEvent] | None = Field(
        default=None, min_length=1, max_length=2, description=_EVENTS
    )


class WebhookOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [WEBHOOK_EXAMPLE]})
    id: str = Field(description="The webhook's id.")
    url: str = Field(description="Where deliveries are POSTed.")
    events: list[WebhookEvent] = Field(description=_EVENTS)
    enabled: bool = Field(description="Whether deliveries are made.")
    created_at: datetime = Field(description="When it was registered.")
    last_delivery_at: datetime | None = Field(description="When the last delivery was tried.")
    last_status: int | None = Field(description="The HTTP status the last delivery got.")
    last_error: str | None = Field(description="Why the last delivery failed, if it did.")


class WebhookWithSecretOut(WebhookOut):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{**WEBHOOK_EXAMPLE, "secret": "whsec_…"}]}
    )
    secret: str = Field(description="whsec_…: shown only in the create response.")


class WebhookCreatedOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "webhook": {**WEBHOOK_EXAMPLE, "secret": "whsec_…"},
                    "warning": "Store the secret now: it is shown only once. Verify…",
                }
            ]
        }
    )
    webhook: WebhookWithSecretOut = Field(description="The webhook, with its signing secret.")
    warning: str = Field(description="A reminder that the secret is shown only once.")


class WebhookListOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"webhooks": [WEBHOOK_EXAMPLE]}]})
    webhooks: list[WebhookOut] = Field(description="The account's webhooks.")
