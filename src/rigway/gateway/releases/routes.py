"""`GET /v1/agent/latest` (public): the signed release manifest for updating agents."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel

from rigway.gateway.errors import NotFound
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.services import services_of
from rigway.releases.manifest import ManifestError, SignedManifest

router = APIRouter(tags=["host agent"])


class AgentReleaseOut(BaseModel):
    version: str
    download_url: str
    sha256_url: str
    sha256: str | None
    manifest: dict[str, Any]
    signature: str


@router.get("/v1/agent/latest", response_model=AgentReleaseOut, responses=error_responses(404))
async def latest_release(request: Request) -> AgentReleaseOut:
    """The newest signed release. Agents verify the Ed25519 signature over the canonical
    `manifest` themselves; the top-level fields repeat it for the spec's readers."""
    path = services_of(request).settings.release_manifest_path
    if path is None:
        raise NotFound("no release is published", code="release_not_found")
    try:
        signed = SignedManifest.from_json(await asyncio.to_thread(path.read_bytes))
    except (OSError, ManifestError) as exc:
        detail = f"the release manifest is unreadable ({exc})"
        raise NotFound(detail, code="release_not_found") from exc
    fields = signed.fields
    return AgentReleaseOut(
        version=str(fields.get("version", "")),
        download_url=str(fields.get("download_url", "")),
        sha256_url=str(fields.get("sha256_url", "")),
        sha256=None if fields.get("sha256") is None else str(fields["sha256"]),
        manifest=dict(fields),
        signature=signed.signature,
    )
