"""Host agent releases (public): the signed manifest at `GET /v1/agent/latest`, the files
the gateway serves itself, and the keys an agent pins as it pairs."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, PlainTextResponse, Response
from pydantic import BaseModel

from rigway.gateway.errors import NotFound
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.releases.builtin import DOWNLOAD_PATH
from rigway.gateway.releases.service import release_service_of
from rigway.gateway.services import services_of

router = APIRouter(tags=["host agent"])


class AgentReleaseOut(BaseModel):
    version: str
    download_url: str
    sha256_url: str
    sha256: str | None
    manifest: dict[str, Any]
    signature: str


class ReleaseKeysOut(BaseModel):
    keys: list[str]


@router.get("/v1/agent/latest", response_model=AgentReleaseOut, responses=error_responses(404))
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
    responses={
        200: {"content": {"application/octet-stream": {}, "text/plain": {}}},
        **error_responses(404),
    },
)
async def release_file(request: Request, file_name: str) -> Response:
    """A release file the gateway serves itself: the wheel the offered manifest names,
    or its `.sha256`. The signed manifest, not this answer, vouches for the bytes."""
    releases = release_service_of(services_of(request))
    found = await asyncio.to_thread(releases.file, file_name)
    if found is None:
        raise NotFound(f"no release file {file_name!r}", code="release_not_found")
    if found.path is not None:
        return FileResponse(found.path, media_type=found.media_type, filename=file_name)
    return PlainTextResponse(found.text or "", media_type=found.media_type)


@router.get("/v1/agent/release-keys", response_model=ReleaseKeysOut)
async def release_keys(request: Request) -> ReleaseKeysOut:
    """The Ed25519 public keys (unpadded base64url) this gateway's releases are signed
    with. An agent reads them once, as it pairs, and trusts only those afterwards."""
    releases = release_service_of(services_of(request))
    return ReleaseKeysOut(keys=await asyncio.to_thread(releases.public_keys))
