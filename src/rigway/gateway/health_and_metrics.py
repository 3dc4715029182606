"""Health and metrics for operators: liveness (/healthz), readiness (/readyz, the store
answers) and Prometheus metrics (/metrics)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from sqlalchemy import text

from rigway.gateway.services import services_of

router = APIRouter(tags=["health and metrics"])


_OK = {"application/json": {"example": {"ok": True}}}


@router.get(
    "/healthz",
    summary="Liveness",
    responses={200: {"description": "The process serves requests", "content": _OK}},
)
async def healthz() -> dict[str, bool]:
    """Answers as long as the gateway's process serves requests."""
    return {"ok": True}


@router.get(
    "/readyz",
    summary="Readiness",
    responses={
        200: {"description": "The store answers", "content": _OK},
        503: {
            "description": "The store or Redis is unreachable, or the node is draining",
            "content": {
                "application/json": {
                    "example": {"ok": False, "error": "store_unavailable: connection refused"}
                }
            },
        },
    },
)
async def readyz(request: Request) -> JSONResponse:
    """200 when the store answers a query (and Redis a ping, when configured); 503 when
    either is unreachable, or while the node drains before it stops (a load balancer
    then sends it nothing new)."""
    services = services_of(request)
    if services.requests_in_flight.is_draining:
        return JSONResponse({"ok": False, "error": "draining"}, status_code=503)
    try:
        async with services.db() as db:
            await db.execute(text("SELECT 1"))
    except Exception as exc:  # any store failure means "not ready", never a 500
        return JSONResponse({"ok": False, "error": f"store_unavailable: {exc}"}, status_code=503)
    if not await services.rate_limits.is_reachable():
        return JSONResponse({"ok": False, "error": "redis_unavailable"}, status_code=503)
    return JSONResponse({"ok": True})


_METRICS_EXAMPLE = """\
# HELP rigway_active_sessions Active sessions served by this gateway.
# TYPE rigway_active_sessions gauge
rigway_active_sessions{node="gw-1"} 1.0
"""


@router.get(
    "/metrics",
    response_class=Response,
    summary="Prometheus metrics",
    responses={
        200: {
            "description": "Prometheus text format 0.0.4",
            "content": {"text/plain": {"schema": {"type": "string"}, "example": _METRICS_EXAMPLE}},
        }
    },
)
async def metrics(request: Request) -> Response:
    """This gateway node's figures, in Prometheus text: request and host-op latency
    histograms, errors by code, sessions ended by reason, webhook outcomes, active
    sessions, connected hosts, requests in flight; each series labelled with `node`."""
    # The app's own registry, never the library's global one: each app (and each
    # test's app) reports its own services.
    registry = services_of(request).metrics.registry
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_PLAIN_0_0_4)
