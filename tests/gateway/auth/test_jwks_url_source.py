"""The JWKS URL source: TTL cache, one refresh on an unknown kid, stale copy while down."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rigway.gateway.auth.console_tokens import (
    ConsoleTokenVerifier,
    JwksUnavailable,
    JwksUrlSource,
)
from rigway.gateway.errors import InvalidConsoleToken

JWKS_URL = "https://idp.test/.well-known/jwks.json"
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def jwk_for(key: Ed25519PrivateKey, kid: str) -> dict[str, Any]:
    return {**jwt.algorithms.OKPAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": kid}


OLD_KEY, NEW_KEY = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
OLD_JWKS = {"keys": [jwk_for(OLD_KEY, "old")]}
ROTATED_JWKS = {"keys": [jwk_for(OLD_KEY, "old"), jwk_for(NEW_KEY, "new")]}


class IdentityProvider:
    """Serves the current JWKS (or a status) and counts fetches."""

    def __init__(self, jwks: dict[str, Any]) -> None:
        self.jwks = jwks
        self.status = 200
        self.fetches = 0

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self._handle)

    def _handle(self, request: httpx2.Request) -> httpx2.Response:
        assert str(request.url) == JWKS_URL
        self.fetches += 1
        return httpx2.Response(self.status, content=json.dumps(self.jwks).encode())


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def source_for(idp: IdentityProvider, clock: FakeMonotonic) -> JwksUrlSource:
    return JwksUrlSource(
        JWKS_URL, transport=idp.transport(), ttl_s=300, min_refresh_interval_s=30, monotonic=clock
    )


def token_signed_by(key: Ed25519PrivateKey, kid: str) -> str:
    claims = {
        "iss": "https://idp.test",
        "aud": "rigway",
        "sub": "usr_1",
        "account_id": "acc_1",
        "iat": int(NOW.timestamp()),
        "exp": int(NOW.timestamp()) + 600,
    }
    return jwt.encode(claims, key, algorithm="EdDSA", headers={"kid": kid})


async def test_second_call_within_ttl_served_from_cache() -> None:
    idp, clock = IdentityProvider(OLD_JWKS), FakeMonotonic()
    source = source_for(idp, clock)

    await source()
    clock.now += 299
    assert await source() == OLD_JWKS
    assert idp.fetches == 1


async def test_call_after_ttl_refetches() -> None:
    idp, clock = IdentityProvider(OLD_JWKS), FakeMonotonic()
    source = source_for(idp, clock)

    await source()
    clock.now += 301
    idp.jwks = ROTATED_JWKS
    assert await source() == ROTATED_JWKS
    assert idp.fetches == 2


async def test_unknown_kid_triggers_one_refetch_and_accepts_rotated_key() -> None:
    idp, clock = IdentityProvider(OLD_JWKS), FakeMonotonic()
    source = source_for(idp, clock)
    verifier = ConsoleTokenVerifier("https://idp.test", "rigway", source, now=lambda: NOW)
    await source()
    clock.now += 60
    idp.jwks = ROTATED_JWKS

    claims = await verifier.verify(token_signed_by(NEW_KEY, "new"))

    assert claims.subject == "usr_1"
    assert idp.fetches == 2


async def test_made_up_kids_do_not_hammer_the_provider() -> None:
    idp, clock = IdentityProvider(OLD_JWKS), FakeMonotonic()
    verifier = ConsoleTokenVerifier(
        "https://idp.test", "rigway", source_for(idp, clock), now=lambda: NOW
    )

    for attempt in range(5):
        with pytest.raises(InvalidConsoleToken, match="unknown key id"):
            await verifier.verify(token_signed_by(NEW_KEY, f"made-up-{attempt}"))

    assert idp.fetches == 1


async def test_provider_down_without_cache_raises_unavailable() -> None:
    idp, clock = IdentityProvider(OLD_JWKS), FakeMonotonic()
    idp.status = 503

    with pytest.raises(JwksUnavailable, match="503"):
        await source_for(idp, clock)()


async def test_provider_down_serves_stale_copy() -> None:
    idp, clock = IdentityProvider(OLD_JWKS), FakeMonotonic()
    source = source_for(idp, clock)
    await source()
    clock.now += 301
    idp.status = 500

    assert await source() == OLD_JWKS


async def test_document_without_keys_list_unavailable() -> None:
    idp, clock = IdentityProvider({"not": "a jwks"}), FakeMonotonic()

    with pytest.raises(JwksUnavailable, match="'keys'"):
        await source_for(idp, clock)()
