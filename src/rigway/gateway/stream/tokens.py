"""Viewer tokens: short-lived JWTs that open one signaling connection to one session.

Design (docs/stream.md):
- HS256 (HMAC-SHA256) with a 256-bit key drawn at random when the gateway starts and
  never stored. Only this process issues and checks these tokens, so no one else needs
  the key, and a restart invalidates every outstanding token, which is right for
  one-time links (the caller asks for fresh credentials). The console's keys are not
  reused: a leaked viewer key can then never mint console tokens, nor the reverse.
- Claims: `session_id`, `rig_id`, `jti` (128 random bits), `iat`, `exp` (1 h), and
  `aud` = "rigway-stream" so no other token of ours passes for one.
- One use: the `jti` is remembered from its first presentation until the token
  expires (then it could not pass anyway, so the memory stays bounded).
- Only HS256 is accepted (no `alg` confusion); expiry is checked against the
  gateway's injected clock, with no leeway.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import jwt

__all__ = [
    "AUDIENCE",
    "TOKEN_TTL",
    "IssuedToken",
    "TokenRejectedError",
    "ViewerClaims",
    "ViewerTokens",
]

AUDIENCE = "rigway-stream"
TOKEN_TTL = timedelta(hours=1)
_ALGORITHM = "HS256"


class TokenRejectedError(Exception):
    """`reason` is the WebSocket close reason: invalid_token, token_expired, token_used."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ViewerClaims:
    session_id: str
    rig_id: str
    jti: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token: str
    claims: ViewerClaims


class ViewerTokens:
    def __init__(self, now: Callable[[], datetime], key: bytes | None = None) -> None:
        self._now = now
        self._key = key if key is not None else secrets.token_bytes(32)
        self._used: dict[str, datetime] = {}

    def issue(self, session_id: str, rig_id: str, *, now: datetime | None = None) -> IssuedToken:
        issued_at = (now or self._now()).replace(microsecond=0)
        claims = ViewerClaims(session_id, rig_id, secrets.token_hex(16), issued_at + TOKEN_TTL)
        payload = {
            "aud": AUDIENCE,
            "session_id": session_id,
            "rig_id": rig_id,
            "jti": claims.jti,
            "iat": int(issued_at.timestamp()),
            "exp": int(claims.expires_at.timestamp()),
        }
        return IssuedToken(jwt.encode(payload, self._key, algorithm=_ALGORITHM), claims)

    def verify(self, token: str) -> ViewerClaims:
        """Signature, audience and expiry; does not consume (the viewer page uses it)."""
        try:
            payload = jwt.decode(
                token,
                self._key,
                algorithms=[_ALGORITHM],
                audience=AUDIENCE,
                # Expiry against our clock below, not the system's.
                options={"verify_exp": False, "require": ["exp", "jti", "aud"]},
            )
            claims = ViewerClaims(
                session_id=_text(payload, "session_id"),
                rig_id=_text(payload, "rig_id"),
                jti=_text(payload, "jti"),
                expires_at=datetime.fromtimestamp(int(payload["exp"]), UTC),
            )
        except (jwt.InvalidTokenError, KeyError, TypeError, ValueError, OverflowError) as exc:
            raise TokenRejectedError("invalid_token", str(exc)) from exc
        if self._now() >= claims.expires_at:
            raise TokenRejectedError("token_expired")
        if claims.jti in self._used:
            raise TokenRejectedError("token_used")
        return claims

    def consume(self, token: str) -> ViewerClaims:
        """`verify`, then remember the jti: the token opens this connection only."""
        claims = self.verify(token)
        self._forget_expired()
        self._used[claims.jti] = claims.expires_at
        return claims

    def _forget_expired(self) -> None:
        now = self._now()
        for jti in [jti for jti, expires_at in self._used.items() if expires_at <= now]:
            del self._used[jti]


def _text(payload: dict[str, object], name: str) -> str:
    value = payload[name]
    if not isinstance(value, str) or not value:
        raise ValueError(f"claim {name} must be a non-empty string")
    return value
