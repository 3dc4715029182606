"""Public shapes of webhook management."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rigway.gateway.validation import StoredText

WebhookEvent = Literal["session.started", "session.ended"]
ALL_EVENTS: list[WebhookEvent] = ["session.started", "session.ended"]


class CreateWebhookIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    url: StoredText = Field(min_length=1, max_length=2048)
    events: list[WebhookEvent] | None = Field(default=None, min_length=1, max_length=2)


class UpdateWebhookIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    enabled: bool | None = None
    events: list[WebhookEvent] | None = Field(default=None, min_length=1, max_length=2)


class WebhookOut(BaseModel):
    id: str
    url: str
    events: list[WebhookEvent]
    enabled: bool
    created_at: datetime
    last_delivery_at: datetime | None
    last_status: int | None
    last_error: str | None


class WebhookWithSecretOut(WebhookOut):
    secret: str = Field(description="whsec_…: shown only in the create response.")


class WebhookCreatedOut(BaseModel):
    webhook: WebhookWithSecretOut
    warning: str


class WebhookListOut(BaseModel):
    webhooks: list[WebhookOut]
