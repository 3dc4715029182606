"""The page a one-time link opens: the live viewer's and the takeover's.

Each is one template and a folder of assets; given a token, the page either refuses (401
for a token that is not valid, 410 once its session ended) or carries what its script
needs to connect (`data-config`). Opening the page does not use the token up: the
signaling socket does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse

from rigway.gateway.services import services_of
from rigway.gateway.settings import GatewaySettings
from rigway.gateway.static_files import StaticFiles
from rigway.gateway.stream.tokens import TokenRejectedError, ViewerClaims, ViewerTokens

__all__ = ["LinkPage", "public_base"]

# The live video's script (peer.js), which both pages load before their own; it is
# served with the live view's assets.
_VIDEO_ASSETS = StaticFiles(Path(__file__).parent / "static", "/v1/stream/static")


def public_base(request: Request, settings: GatewaySettings) -> str:
    """The configured public base URL when one was set, else the request's own."""
    if "public_base_url" in settings.model_fields_set:
        return settings.public_base_url.rstrip("/")
    return str(request.base_url).rstrip("/")


class LinkPage:
    def __init__(
        self,
        package: Path,
        *,
        template: str,
        static_prefix: str,
        title: str,
        link_name: str,
        signaling_url_for: Callable[[str], str],
    ) -> None:
        """`package`: the folder holding `templates/<template>` and `static/` (served
        under `static_prefix`); `title`: the page's title once it may connect;
        `link_name`: how its refusals name the link ("viewer", "takeover")."""
        self.static = StaticFiles(package / "static", static_prefix)
        self._pages = Environment(
            loader=FileSystemLoader(package / "templates"),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self._pages.globals["static_url"] = self.static.url
        self._pages.globals["peer_script_url"] = _VIDEO_ASSETS.url("peer.js")
        self._template = template
        self._title = title
        self._signaling_url_for = signaling_url_for
        self._refusals = {
            "invalid_token": f"This {link_name} link is not valid.",
            "token_expired": f"This {link_name} link has expired: ask for a new one.",
            "token_used": f"This {link_name} link was already used: ask for a new one.",
        }

    async def for_token(
        self,
        request: Request,
        tokens: ViewerTokens,
        token: str,
        extra: Callable[[ViewerClaims], Mapping[str, object]] | None = None,
    ) -> HTMLResponse:
        """The page for `token` (checked, not used up): its config holds the signaling
        URL, the session, the ICE servers and `extra` of the token's claims. A session
        live on another node (it holds the rig) is served too: the socket is relayed."""
        services = services_of(request)
        try:
            claims = await tokens.check(token)
        except TokenRejectedError as exc:
            refusal = self._refusals.get(exc.reason, self._refusals["invalid_token"])
            return self.message(401, refusal)
        if (
            services.sessions.live.get(claims.session_id) is None
            and await services.stream.holder_url_of(claims.rig_id) is None
        ):
            return self.message(410, "The session has ended.")
        signaling_url = self._signaling_url_for(public_base(request, services.settings))
        config: dict[str, object] = {
            "signaling_url": signaling_url,
            "session_id": claims.session_id,
            **(extra(claims) if extra is not None else {}),
            "ice_servers": [
                s.model_dump(exclude_none=True) for s in services.settings.stream_ice_servers
            ],
        }
        return self._render(200, config=config, connect_src=signaling_url)

    def message(self, status: int, message: str) -> HTMLResponse:
        """The page with only `message` (no script): a link that cannot be served."""
        return self._render(status, message=message)

    def _render(
        self,
        status: int,
        *,
        message: str = "",
        config: dict[str, object] | None = None,
        connect_src: str = "",
    ) -> HTMLResponse:
        html = self._pages.get_template(self._template).render(
            title=self._title if config else "Not available",
            subtitle=f"session {config['session_id']}" if config else "",
            state="connecting" if config else "",
            message=message,
            # In an attribute, where autoescape is exactly right for JSON text.
            config_json=json.dumps(config) if config else "",
        )
        return HTMLResponse(html, status_code=status, headers=_headers(connect_src))


def _headers(connect_src: str) -> dict[str, str]:
    # The token sits in the URL: never cached, never sent on as a referrer, never framed.
    return {
        "Cache-Control": "no-store",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": (
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            f"media-src 'self' blob: mediastream:; connect-src 'self' {connect_src}; "
            "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
        ),
    }
