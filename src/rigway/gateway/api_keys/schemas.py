"""Public shapes of API key management."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rigway.gateway.auth.api_key_auth import ALL_SCOPES
from rigway.gateway.validation import StoredText

Scope = Literal["rigs:read", "rigs:wake", "sessions", "input", "apps", "stream"]
assert set(Scope.__args__) == set(ALL_SCOPES)  # type: ignore[attr-defined]


class CreateKeyIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: StoredText = Field(default="", max_length=200)
    environment: Literal["live", "test"] = "live"
    scopes: list[Scope] | None = Field(default=None, min_length=1, max_length=len(ALL_SCOPES))


class ApiKeyOut(BaseModel):
    id: str
    name: str
    key_prefix: str
    environment: Literal["live", "test"]
    scopes: list[str]
    created_at: datetime
    last_used_at: datetime | None


class ApiKeyCreatedOut(ApiKeyOut):
    secret: str = Field(description="The full key. Shown only in this response.")


class ApiKeyListOut(BaseModel):
    keys: list[ApiKeyOut]
