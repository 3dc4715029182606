"""The ids that appear in the API's paths, each described once for the OpenAPI
document (`Path(description=...)`); a route names its path parameter with one of these."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

__all__ = ["FileName", "KeyId", "RigId", "SessionId", "WebhookId"]

SessionId = Annotated[str, Path(description="A session's id (`ses_…`), from `POST /v1/sessions`.")]
RigId = Annotated[str, Path(description="A rig's id (`rig_…`), from `GET /v1/rigs`.")]
KeyId = Annotated[str, Path(description="An API key's id, from `GET /v1/keys`.")]
WebhookId = Annotated[str, Path(description="A webhook's id, from `GET /v1/webhooks`.")]
FileName = Annotated[
    str, Path(description="A file the release manifest names: the wheel or its `.sha256`.")
]
