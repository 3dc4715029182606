"""Viewer tokens: short-lived JWTs that open one signaling connection to one session.

Design (docs/stream.md):
- HS256 (HMAC-SHA256). One node alone draws a 256-bit key at random when it starts and
  never stores it: only it issues and checks these tokens, and a restart invalidates
  every outstanding token, which is right for one-time links (the caller asks for fresh
  credentials). Several nodes (Redis configured) derive the key from the secret key
  they share, with HKDF and a label of its own per kind of link (`link_tokens`), so a
  token issued by one node opens a socket on any other. Neither key is any other key
  of ours: a leaked viewer key can never mint console tokens nor peer-link tokens, nor
  a viewer's link take control.
- Claims: `session_id`, `rig_id`, `jti` (128 random bits), `iat`, `exp` (1 h), and
  `aud` = "rigway-stream" so no other token of ours passes for one.
- One use: the `jti` is remembered from its first presentation until the token
  expires (then it could not pass anyway, so the memory stays bounded): in this
  process, and with several nodes in Redis too (`SET NX` expiring with the token), so
  a token used on one node is used on all.
- Only HS256 is accepted (no `alg` confusion); expiry is checked against the
  gateway's injected clock, with no leeway.
"""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol

import jwt
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from rigway.gateway.redis_clients import redis_client

__all__ = [
    "AUDIENCE",
    "TOKEN_TTL",
    "IssuedToken",
    "RedisUsedTokens",
    "TokenRejectedError",
    "UsedTokens",
    "ViewerClaims",
    "ViewerTokens",
    "derived_key",
    "link_tokens",
]

_log = logging.getLogger(__name__)

AUDIENCE = "rigway-stream"
TOKEN_TTL = timedelta(hours=1)
_ALGORITHM = "HS256"
# HKDF's `info` per kind of link: a key of its own for each, and for nothing else (the
# peer link's token is an HMAC of the same secret under another label).
_KEY_LABELS = {
    "stream": b"rigway viewer token key v1: stream",
    "takeover": b"rigway viewer token key v1: takeover",
}
_USED_KEY = "rigway:link-jti:{}"


class TokenRejectedError(Exception):
    """`reason` is the WebSocket close reason: invalid_token, token_expired, token_used,
    unavailable."""

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


def derived_key(secret_key: bytes, link: Literal["stream", "takeover"]) -> bytes:
    """The HS256 key of one kind of link, from the secret key the nodes share."""
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_KEY_LABELS[link])
    return hkdf.derive(secret_key)


class UsedTokens(Protocol):
    """The jtis used on any node of the service (this process remembers its own)."""

    async def first_use(self, jti: str, ttl_s: int) -> bool:
        """Record `jti` as used for `ttl_s`; True only for the first use anywhere."""
        ...

    async def was_used(self, jti: str) -> bool: ...

    async def close(self) -> None: ...


class RedisUsedTokens:
    """Used jtis in Redis: `SET NX` decides the first use, atomically across nodes, and
    the key expires with the token (`redis.asyncio`, the `redis` extra)."""

    def __init__(self, redis_url: str) -> None:
        # Not retried: `SET NX` sent again after a lost reply would refuse its own first use.
        self._client = redis_client(redis_url, retrying=False)
        self._closed = False

    async def first_use(self, jti: str, ttl_s: int) -> bool:
        return bool(await self._client.set(_USED_KEY.format(jti), b"1", nx=True, ex=ttl_s))

    async def was_used(self, jti: str) -> bool:
        return bool(await self._client.exists(_USED_KEY.format(jti)))

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._client.aclose()


class ViewerTokens:
    def __init__(
        self,
        now: Callable[[], datetime],
        key: bytes | None = None,
        shared: UsedTokens | None = None,
    ) -> None:
        """`shared`: the jtis used on other nodes too (None: one node, this process)."""
        self._now = now
        self._key = key if key is not None else secrets.token_bytes(32)
        self._shared = shared
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

    async def use_once(self, token: str) -> ViewerClaims:
        """`consume`, and with several nodes the first use across all of them, or
        `TokenRejectedError` (`unavailable` while Redis does not answer: a use that
        cannot be proven the first is refused, and the token stays good for a retry)."""
        claims = self.consume(token)  # before any await: a second use here fails at once
        if self._shared is None:
            return claims
        ttl_s = max(1, math.ceil((claims.expires_at - self._now()).total_seconds()))
        try:
            first = await self._shared.first_use(claims.jti, ttl_s)
        except Exception as exc:  # Redis away: not proven unused
            self._used.pop(claims.jti, None)
            _log.warning("could not record a link token's use: %s", exc)
            raise TokenRejectedError("unavailable", "the token store did not answer") from exc
        if not first:
            raise TokenRejectedError("token_used")
        return claims

    async def check(self, token: str) -> ViewerClaims:
        """`verify`, and not used on another node either (for the page: it does not
        use the token up; Redis away is no reason to refuse a page)."""
        claims = self.verify(token)
        if self._shared is None:
            return claims
        try:
            used = await self._shared.was_used(claims.jti)
        except Exception as exc:
            _log.warning("could not look a link token up: %s", exc)
            return claims
        if used:
            raise TokenRejectedError("token_used")
        return claims

    async def close(self) -> None:
        if self._shared is not None:
            await self._shared.close()

    def _forget_expired(self) -> None:
        now = self._now()
        for jti in [jti for jti, expires_at in self._used.items() if expires_at <= now]:
            del self._used[jti]


def _text(payload: dict[str, object], name: str) -> str:
    value = payload[name]
    if not isinstance(value, str) or not value:
        raise ValueError(f"claim {name} must be a non-empty string")
    return value


def link_tokens(
    now: Callable[[], datetime], secret_key: bytes, redis_url: str | None
) -> tuple[ViewerTokens, ViewerTokens]:
    """The live view's tokens and the takeover's. Several nodes (Redis): keys derived
    from their shared `secret_key` and one store of used jtis in Redis for both (closing
    either closes it). One node: random keys, used jtis in this process."""
    if redis_url is None:
        return ViewerTokens(now), ViewerTokens(now)
    used = RedisUsedTokens(redis_url)
    return (
        ViewerTokens(now, derived_key(secret_key, "stream"), used),
        ViewerTokens(now, derived_key(secret_key, "takeover"), used),
    )
