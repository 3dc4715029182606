"""Console tokens: JWTs from the identity provider, verified against its JWKS.

Accepted: RS256, ES256 and EdDSA (Ed25519), with a `kid` naming a key in the JWKS whose
type (and `alg`, when the JWK states one) matches the token's `alg`. So `none`, HS256
"signed" with a public key, and any algorithm/key mix-up are refused before PyJWT runs.
Required claims: `exp`, `iat`, `iss`, `aud`, `sub` and the account claim (`account_id` by
default). Times are checked against an injected clock with a small leeway.

Where the key set comes from is a `JwksSource`:
- `JwksUrlSource` fetches a JWKS URL with httpx2 and caches it for `ttl_s`; an unknown
  `kid` forces one refetch (a key rotation), at most once per `min_refresh_interval_s`,
  so tokens with made-up kids cannot hammer the identity provider.
- `StaticJwksSource` hands out a fixed JWKS: the embedded identity provider's
  (`rigway.gateway.identity.signing_keys.jwks(key)`), or test keys.

    InvalidConsoleToken (rigway.gateway.errors, 401 invalid_console_token)
                       every refusal of the token itself; str(exc) is the reason
    JwksUnavailable    the key set could not be fetched and none is cached: a server
                       problem (render as 503), not the caller's fault
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

from rigway.gateway.errors import InvalidConsoleToken

__all__ = [
    "ALLOWED_ALGORITHMS",
    "ConsoleClaims",
    "ConsoleTokenVerifier",
    "JwksSource",
    "JwksUnavailable",
    "JwksUrlSource",
    "StaticJwksSource",
]

# alg → (JWK kty, JWK crv or None)
ALLOWED_ALGORITHMS: Mapping[str, tuple[str, str | None]] = {
    "RS256": ("RSA", None),
    "ES256": ("EC", "P-256"),
    "EdDSA": ("OKP", "Ed25519"),
}
REQUIRED_CLAIMS = ("exp", "iat", "iss", "aud", "sub")
DEFAULT_LEEWAY_S = 30.0
MAX_TOKEN_LENGTH = 8 * 1024
MIN_RSA_KEY_BITS = 2048
_API_KEY_PREFIXES = ("rgw_live_sk_", "rgw_test_sk_", "rgw_")
_MAX_TIMESTAMP = 253402300800  # 10000-01-01T00:00:00Z


class JwksUnavailable(Exception):
    pass


class JwksSource(Protocol):
    async def __call__(self, *, force_refresh: bool = False) -> Mapping[str, Any]:
        """The current JWKS; `force_refresh` asks for a fresh copy (an unknown kid)."""
        ...


class StaticJwksSource:
    def __init__(self, jwks: Mapping[str, Any]) -> None:
        self._jwks = jwks

    async def __call__(self, *, force_refresh: bool = False) -> Mapping[str, Any]:
        return self._jwks


class JwksUrlSource:
    """A JWKS fetched from `url`, cached for `ttl_s`; stale copies serve while it is down."""

    def __init__(
        self,
        url: str,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        ttl_s: float = 300.0,
        min_refresh_interval_s: float = 30.0,
        timeout_s: float = 5.0,
        max_bytes: int = 256 * 1024,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._url = url
        self._transport = transport
        self._ttl_s = ttl_s
        self._min_refresh_interval_s = min_refresh_interval_s
        self._timeout_s = timeout_s
        self._max_bytes = max_bytes
        self._monotonic = monotonic
        self._lock = asyncio.Lock()
        self._jwks: Mapping[str, Any] | None = None
        self._fetched_at = 0.0
        self._attempted_at: float | None = None

    async def __call__(self, *, force_refresh: bool = False) -> Mapping[str, Any]:
        async with self._lock:  # one fetch at a time; the others get its result
            now = self._monotonic()
            is_fresh = self._jwks is not None and now - self._fetched_at < self._ttl_s
            if is_fresh and not force_refresh and self._jwks is not None:
                return self._jwks
            may_fetch = (
                self._attempted_at is None
                or now - self._attempted_at >= self._min_refresh_interval_s
            )
            if not may_fetch:
                return self._cached_or_raise("the JWKS fetch was tried moments ago")
            self._attempted_at = now
            try:
                self._jwks = await self._fetch()
            except JwksUnavailable as exc:
                return self._cached_or_raise(str(exc))
            self._fetched_at = now
            return self._jwks

    def _cached_or_raise(self, reason: str) -> Mapping[str, Any]:
        if self._jwks is None:
            raise JwksUnavailable(reason)
        return self._jwks

    async def _fetch(self) -> Mapping[str, Any]:
        # trust_env=False: settings are passed in, never picked up from the environment.
        async with httpx2.AsyncClient(
            transport=self._transport, trust_env=False, timeout=self._timeout_s
        ) as client:
            try:
                async with asyncio.timeout(self._timeout_s):
                    body = await _read_capped(client, self._url, self._max_bytes)
            except (httpx2.HTTPError, TimeoutError) as exc:
                raise JwksUnavailable(f"JWKS fetch from {self._url} failed: {exc!r}") from exc
        try:
            document = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise JwksUnavailable(f"JWKS from {self._url} is not JSON") from exc
        if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
            raise JwksUnavailable(f"JWKS from {self._url} has no 'keys' list")
        return document


async def _read_capped(client: httpx2.AsyncClient, url: str, max_bytes: int) -> bytes:
    body = bytearray()
    async with client.stream("GET", url, headers={"Accept": "application/json"}) as response:
        if response.status_code != 200:
            raise JwksUnavailable(f"JWKS fetch from {url} answered {response.status_code}")
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > max_bytes:
                raise JwksUnavailable(f"JWKS from {url} is larger than {max_bytes} bytes")
    return bytes(body)


@dataclass(frozen=True, slots=True)
class ConsoleClaims:
    subject: str
    account_id: str
    issuer: str
    issued_at: datetime
    expires_at: datetime
    token_id: str | None
    claims: Mapping[str, Any]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class ConsoleTokenVerifier:
    def __init__(
        self,
        issuer: str,
        audience: str,
        jwks_source: JwksSource,
        *,
        account_claim: str = "account_id",
        leeway_s: float = DEFAULT_LEEWAY_S,
        now: Callable[[], datetime] = _utc_now,
    ) -> None:
        self._issuer = issuer
        self._audience = audience
        self._jwks_source = jwks_source
        self._account_claim = account_claim
        self._leeway_s = leeway_s
        self._now = now

    async def verify(self, token: str) -> ConsoleClaims:
        """The token's claims; InvalidConsoleToken when it is not a valid console token."""
        _refuse_non_jwt(token)
        algorithm, kid = _algorithm_and_kid(token)
        jwk = await self._find_jwk(kid)
        key = _public_key(jwk, algorithm)
        claims = self._decode(token, key, algorithm)
        self._check_times(claims)
        return self._console_claims(claims)

    async def _find_jwk(self, kid: str) -> Mapping[str, Any]:
        jwk = _jwk_by_kid(await self._jwks_source(), kid)
        if jwk is None:
            # A kid we do not know may be a key the provider just rotated in.
            jwk = _jwk_by_kid(await self._jwks_source(force_refresh=True), kid)
        if jwk is None:
            raise InvalidConsoleToken("token signed with an unknown key id")
        return jwk

    def _decode(self, token: str, key: Any, algorithm: str) -> dict[str, Any]:
        try:
            return jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self._audience,
                issuer=self._issuer,
                options={
                    "require": list(REQUIRED_CLAIMS),
                    # Times are checked in _check_times against the injected clock.
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                    "enforce_minimum_key_length": True,
                },
            )
        except jwt.InvalidAudienceError as exc:
            raise InvalidConsoleToken("token is for another audience") from exc
        except jwt.InvalidIssuerError as exc:
            raise InvalidConsoleToken("token is from another issuer") from exc
        except jwt.MissingRequiredClaimError as exc:
            raise InvalidConsoleToken(f"token lacks the {exc.claim} claim") from exc
        except jwt.InvalidSignatureError as exc:
            raise InvalidConsoleToken("token signature does not verify") from exc
        except jwt.PyJWTError as exc:
            raise InvalidConsoleToken("token is malformed") from exc

    def _check_times(self, claims: Mapping[str, Any]) -> None:
        now = self._now().timestamp()
        expires, issued = _numeric_claim(claims, "exp"), _numeric_claim(claims, "iat")
        if expires <= now - self._leeway_s:
            raise InvalidConsoleToken("token has expired")
        if issued > now + self._leeway_s:
            raise InvalidConsoleToken("token is issued in the future")
        if "nbf" in claims and _numeric_claim(claims, "nbf") > now + self._leeway_s:
            raise InvalidConsoleToken("token is not valid yet")

    def _console_claims(self, claims: Mapping[str, Any]) -> ConsoleClaims:
        subject, account_id = claims.get("sub"), claims.get(self._account_claim)
        if not isinstance(subject, str) or not subject:
            raise InvalidConsoleToken("token has an empty subject")
        if not isinstance(account_id, str) or not account_id:
            raise InvalidConsoleToken(f"token lacks the {self._account_claim} claim")
        token_id = claims.get("jti")
        return ConsoleClaims(
            subject=subject,
            account_id=account_id,
            issuer=self._issuer,
            issued_at=datetime.fromtimestamp(_numeric_claim(claims, "iat"), UTC),
            expires_at=datetime.fromtimestamp(_numeric_claim(claims, "exp"), UTC),
            token_id=token_id if isinstance(token_id, str) else None,
            claims=claims,
        )


def _refuse_non_jwt(token: str) -> None:
    if token.startswith(_API_KEY_PREFIXES):
        raise InvalidConsoleToken("an API key is not a console token")
    if len(token) > MAX_TOKEN_LENGTH:
        raise InvalidConsoleToken("token is too long")
    if token.count(".") != 2:
        raise InvalidConsoleToken("token is malformed")


def _algorithm_and_kid(token: str) -> tuple[str, str]:
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise InvalidConsoleToken("token is malformed") from exc
    algorithm, kid = header.get("alg"), header.get("kid")
    if not isinstance(algorithm, str) or algorithm not in ALLOWED_ALGORITHMS:
        raise InvalidConsoleToken(f"token algorithm {algorithm!r} is not accepted")
    if not isinstance(kid, str) or not kid:
        raise InvalidConsoleToken("token has no key id")
    return algorithm, kid


def _jwk_by_kid(jwks: Mapping[str, Any], kid: str) -> Mapping[str, Any] | None:
    keys = jwks.get("keys")
    if not isinstance(keys, list):
        return None
    return next((k for k in keys if isinstance(k, Mapping) and k.get("kid") == kid), None)


def _public_key(jwk: Mapping[str, Any], algorithm: str) -> Any:
    kty, crv = ALLOWED_ALGORITHMS[algorithm]
    if jwk.get("kty") != kty or (crv is not None and jwk.get("crv") != crv):
        raise InvalidConsoleToken(f"token algorithm {algorithm} does not match its key")
    if jwk.get("alg", algorithm) != algorithm or jwk.get("use", "sig") != "sig":
        raise InvalidConsoleToken(f"token algorithm {algorithm} does not match its key")
    try:
        key = jwt.PyJWK(dict(jwk), algorithm=algorithm).key
    except jwt.PyJWTError as exc:
        raise InvalidConsoleToken("token key is unusable") from exc
    if isinstance(key, RSAPublicKey) and key.key_size < MIN_RSA_KEY_BITS:
        raise InvalidConsoleToken("token key is too short")
    return key


def _numeric_claim(claims: Mapping[str, Any], name: str) -> float:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidConsoleToken(f"token claim {name} is not a number")
    # NaN compares false with everything and would pass every time check; the bound
    # keeps datetime.fromtimestamp from overflowing.
    if not (math.isfinite(value) and 0 <= value < _MAX_TIMESTAMP):
        raise InvalidConsoleToken(f"token claim {name} is out of range")
    return float(value)
