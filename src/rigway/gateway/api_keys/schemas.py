"""Public shapes of API key management."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from rigway.gateway.auth.api_key_auth import ALL_SCOPES
from rigway.gateway.validation import StoredText

Scope = Literal["rigs:read", "rigs:wake", "sessions", "input", "apps", "stream"]
assert set(Scope.__args__) == set(ALL_SCOPES)  # type: ignore[attr-defined]


_SCOPES = (
    "`rigs:read`, `rigs:wake`, `sessions` (create and end sessions, screenshot, dirty, "
    "observe, targets, wait), `input`, `apps`, `stream`"
)
KEY_EXAMPLE: JsonDict = {
    "id": "6f1c2b0e-9a4d-4c1e-8f3b-2d7a5e9c1b40",
    "name": "my agent",
    "key_prefix": "rgw_live_sk_3fa91c0d",
    "environment": "live",
    "scopes": ["rigs:read", "rigs:wake", "sessions", "input", "apps", "stream"],
    "created_at": "2026-11-25T21:00:00Z",
    "last_used_at": None,
}


class CreateKeyIn(BaseModel):
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"name": "my agent", "environment": "live", "scopes": ["sessions", "input"]}
            ]
        },
    )

    name: StoredText = Field(default="", max_length=200, description="A name to know it by.")
    environment: Literal["live", "test"] = Field(
        default="live", description="Written into the key: `rgw_live_sk_…` or `rgw_test_sk_…`."
    )
    scopes: list[Scope] | None = Field(
        default=None,
        min_length=1,
        max_length=len(ALL_SCOPES),
        description=f"What the key may do, of {_SCOPES}; absent: all of them.",
    )


class ApiKeyOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [KEY_EXAMPLE]})
    id: str = Field(description="The key's id (revoke it by this).")
    name: str = Field(description="Its name.")
    key_prefix: str = Field(
        description="The key's first 20 characters: enough to recognise it, never to use it."
    )
    environment: Literal["live", "test"] = Field(description="`live` or `test`.")
    scopes: list[str] = Field(description=f"What it may do: {_SCOPES}.")
    created_at: datetime = Field(description="When it was created.")
    last_used_at: datetime | None = Field(description="When it last authenticated a request.")


class ApiKeyCreatedOut(ApiKeyOut):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{**KEY_EXAMPLE, "secret": "rgw_live_sk_3fa91c0d…"}]}
    )
    secret: str = Field(description="The full key. Shown only in this response.")


class ApiKeyListOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"keys": [KEY_EXAMPLE]}]})
    keys: list[ApiKeyOut] = Field(description="The account's active keys, prefix only.")
