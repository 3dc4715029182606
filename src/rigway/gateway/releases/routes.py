"""Host agent releases (public): the signed manifest at `GET /v1/agent/latest`, the files
the gateway serves itself, and the keys an agent pins as it pairs."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, PlainTextResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from rigway.gateway.errors import NotFound
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.path_parameters import FileName
from rigway.gateway.releases.builtin import DOWNLOAD_PATH
from rigway.gateway.releases.service import release_service_of
from rigway.gateway.services import services_of

router = APIRouter(tags=["host agent"])


_MANIFEST_EXAMPLE: JsonDict = {
    "version": "0.1.0",
    "download_url": "/v1/agent/releases/rigway-0.1.0-py3-none-any.whl",
    "sha256_url": "/v1/agent/releases/rigway-0.1.0-py3-none-any.whl.sha256",
    "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
}


class AgentReleaseOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    **_MANIFEST_EXAMPLE,
                    "manifest": _MANIFEST_EXAMPLE,
                    "signature": "q3xN…",
                }
            ]
        }
    )
    version: str = Field(description="The release's version.")
    download_url: str = Field(description="Where to download it.")
    sha256_url: str = Field(description="Where to read its SHA-256.")
    sha256: str | None = Field(description="Its SHA-256, hex, when the manifest carries it.")
    manifest: dict[str, Any] = Field(description="The signed manifest, whole.")
    signature: str = Field(
        description="Ed25519 over the canonical JSON of `manifest` (sorted keys, no spaces)."
    )


class ReleaseKeysOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"keys": ["11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"]}]}
    )
    keys: list[str] = Field(description="Ed25519 public keys, unpadded base64url.")


@router.get(
    "/v1/agent/latest",
    response_model=AgentReleaseOut,
    summary="The newest host agent release",
    responses=error_responses(404),
)
async def latest_release(request: Request) -> AgentReleaseOut:
    """The newest signed release: the configured one, else the gateway's own. Agents
    verify the Ed25519 signature over the canonical `manifest` themselves; the top-level
    fields repeat it for readers of docs/api.md (Agent releases)."""
    releases = release_service_of(services_of(request))
    signed = await asyncio.to_thread(releases.latest)
    fields = signed.fields
    return AgentReleaseOut(
        version=str(fields.get("version", "")),
        download_url=str(fields.get("download_url", "")),
        sha256_url=str(fields.get("sha256_url", "")),
        sha256=None if fields.get("sha256") is None else str(fields["sha256"]),
        manifest=dict(fields),
        signature=signed.signature,
    )


@router.get(
    DOWNLOAD_PATH + "/{file_name}",
    response_class=Response,
    summary="Download a release file",
    responses={
        200: {
            "description": "The wheel (binary) or its `.sha256` (text)",
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                "text/plain": {
                    "schema": {"type": "string"},
                    "example": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                },
            },
        },
        **error_responses(404),
    },
)
async def release_file(request: Request, file_name: FileName) -> Response:
    """A release file the gateway serves itself: the wheel the offered manifest names,
    or its `.sha256`. The signed manifest, not this answer, vouches for the bytes."""
    releases = release_service_of(services_of(request))
    found = await asyncio.to_thread(releases.file, file_name)
    if found is None:
        raise NotFound(f"no release file {file_name!r}", code="release_not_found")
    if found.path is not None:
        return FileResponse(found.path, media_type=found.media_type, filename=file_name)
    return PlainTextResponse(found.text or "", media_type=found.media_type)


@router.get("/v1/agent/release-keys", response_model=ReleaseKeysOut, summary="Release signing keys")
async def release_keys(request: Request) -> ReleaseKeysOut:
    """The Ed25519 public keys (unpadded base64url) this gateway's releases are signed
    with. An agent reads them once, as it pairs, and trusts only those afterwards."""
    releases = release_service_of(services_of(request))
    return ReleaseKeysOut(keys=await asyncio.to_thread(releases.public_keys))
