"""`rigway mcp --http`: the streamable HTTP transport, behind a bearer token off loopback.

The MCP endpoint drives a desktop, so anyone who can reach it can click on that
desktop. Listening beyond loopback therefore needs `--auth-token`; with a token, every
HTTP request must carry `Authorization: Bearer <token>` (compared in constant time) or
gets 401 before the MCP app sees it.
"""

from __future__ import annotations

import hmac
import ipaddress
import json

from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["BearerAuth", "http_app", "is_loopback", "serve_http"]

LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})


def is_loopback(host: str) -> bool:
    """True when `host` (a name or address to listen on) only reaches this machine."""
    if host.casefold() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """ASGI middleware: HTTP requests without `Authorization: Bearer <token>` get 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Lifespan events carry no headers and must reach the app (it starts its sessions).
        if scope["type"] != "http" or self._authorized(scope):
            await self._app(scope, receive, send)
            return
        body = json.dumps({"error": "unauthorized: send Authorization: Bearer <token>"})
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="rigway-mcp"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body.encode()})

    def _authorized(self, scope: Scope) -> bool:
        headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
        given = next((value for name, value in headers if name == b"authorization"), b"")
        return hmac.compare_digest(given, self._expected)


def http_app(server: MCPServer, host: str, auth_token: str | None) -> ASGIApp:
    """The server's streamable HTTP app at /mcp, behind `BearerAuth` when a token is set."""
    app: ASGIApp = server.streamable_http_app(host=host)
    return app if auth_token is None else BearerAuth(app, auth_token)


async def serve_http(server: MCPServer, host: str, port: int, auth_token: str | None) -> None:
    """Serve until cancelled (uvicorn, quiet: the SDK's own runner logs each request)."""
    import uvicorn

    app = http_app(server, host, auth_token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    await uvicorn.Server(config).serve()
