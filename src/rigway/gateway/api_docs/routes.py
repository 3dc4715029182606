"""`/docs` (Swagger UI) and `/redoc` (ReDoc) over the gateway's own `/openapi.json`.

GET /docs                    Swagger UI
GET /redoc                   ReDoc
GET /docs/static/{name}      their scripts and styles (vendored: static/VENDORED.md)

FastAPI's own pages load these assets from a CDN, a blank page offline or behind a
strict proxy; `create_app` turns those off (`docs_url=None`, `redoc_url=None`) and
includes this router instead, as FastAPI's "Self-hosting JavaScript and CSS for docs"
describes.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from starlette.responses import HTMLResponse, Response

from rigway.gateway.static_files import StaticFiles

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

_STATIC = StaticFiles(Path(__file__).parent / "static", "/docs/static")
_OPENAPI_URL = "/openapi.json"
_TITLE = "Rigway API"
# The default favicons are fetched from FastAPI's site; an empty data URL asks for none.
_NO_FAVICON = "data:,"


@router.get("/docs")
async def swagger_ui() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url=_OPENAPI_URL,
        title=f"{_TITLE}: Swagger UI",
        swagger_js_url=_STATIC.url("swagger-ui-bundle.js"),
        swagger_css_url=_STATIC.url("swagger-ui.css"),
        swagger_favicon_url=_NO_FAVICON,
    )


@router.get("/redoc")
async def redoc() -> HTMLResponse:
    return get_redoc_html(
        openapi_url=_OPENAPI_URL,
        title=f"{_TITLE}: ReDoc",
        redoc_js_url=_STATIC.url("redoc.standalone.js"),
        redoc_favicon_url=_NO_FAVICON,
        with_google_fonts=False,
    )


@router.get("/docs/static/{name}")
async def static_file(name: str) -> Response:
    return _STATIC.response(name)
