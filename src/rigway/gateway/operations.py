"""Operational endpoints: liveness, readiness, metrics."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from sqlalchemy import text

from rigway.gateway.services import services_of

router = APIRouter(tags=["operations"])


@router.get("/healthz")
async def healthz() -> dict[str, bool]:
    return {"ok": True}


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    try:
        async with services_of(request).db() as db:
            await db.execute(text("SELECT 1"))
    except Exception as exc:  # any store failure means "not ready", never a 500
        return JSONResponse({"ok": False, "error": f"store_unavailable: {exc}"}, status_code=503)
    return JSONResponse({"ok": True})


@router.get("/metrics", response_class=PlainTextResponse)
async def metrics(request: Request) -> str:
    services = services_of(request)
    lines = [
        "# HELP rigway_active_sessions Active sessions served by this gateway.",
        "# TYPE rigway_active_sessions gauge",
        f"rigway_active_sessions {len(services.sessions.live.all())}",
        "# HELP rigway_connected_hosts Host agents connected to this gateway.",
        "# TYPE rigway_connected_hosts gauge",
        f"rigway_connected_hosts {services.registry.connected_count()}",
    ]
    return "\n".join(lines) + "\n"
