"""Console token verification: every bad token refused, good ones for RS256, ES256, EdDSA."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jwt.warnings import InsecureKeyLengthWarning

from rigway.gateway.auth.console_tokens import ConsoleTokenVerifier, StaticJwksSource
from rigway.gateway.errors import InvalidConsoleToken
from rigway.gateway.identity.signing_keys import generate_signing_key, jwks
from rigway.gateway.identity.tokens import issue_console_token

ISSUER = "https://idp.test"
AUDIENCE = "rigway-console"
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
T = int(NOW.timestamp())


@dataclass(frozen=True)
class SampleKey:
    algorithm: str
    kid: str
    private_key: Any
    jwk: dict[str, Any]


def _make_key(algorithm: str) -> SampleKey:
    private_key: Any
    if algorithm == "RS256":
        private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = jwt.algorithms.RSAAlgorithm.to_jwk(private_key.public_key(), as_dict=True)
    elif algorithm == "ES256":
        private_key = ec.generate_private_key(ec.SECP256R1())
        jwk = jwt.algorithms.ECAlgorithm.to_jwk(private_key.public_key(), as_dict=True)
    else:
        private_key = Ed25519PrivateKey.generate()
        jwk = jwt.algorithms.OKPAlgorithm.to_jwk(private_key.public_key(), as_dict=True)
    kid = f"kid-{algorithm.lower()}"
    return SampleKey(algorithm, kid, private_key, {**jwk, "kid": kid, "use": "sig"})


KEYS = {alg: _make_key(alg) for alg in ("RS256", "ES256", "EdDSA")}


class CountingSource:
    """A JWKS source over fixed key sets; the next set is served after a forced refresh."""

    def __init__(self, *key_sets: list[dict[str, Any]]) -> None:
        self._key_sets = list(key_sets)
        self.calls: list[bool] = []

    async def __call__(self, *, force_refresh: bool = False) -> Mapping[str, Any]:
        self.calls.append(force_refresh)
        if force_refresh and len(self._key_sets) > 1:
            self._key_sets.pop(0)
        return {"keys": self._key_sets[0]}


def all_keys() -> list[dict[str, Any]]:
    return [key.jwk for key in KEYS.values()]


def verifier(source: Any = None, **options: Any) -> ConsoleTokenVerifier:
    return ConsoleTokenVerifier(
        ISSUER,
        AUDIENCE,
        source if source is not None else CountingSource(all_keys()),
        now=lambda: NOW,
        **options,
    )


def claims(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "usr_1",
        "account_id": "acc_1",
        "iat": T - 10,
        "exp": T + 3600,
    }
    base.update(changes)
    return {name: value for name, value in base.items() if value is not None}


def token(key: SampleKey | None = None, *, kid: str | None = None, **claim_changes: Any) -> str:
    chosen = key if key is not None else KEYS["EdDSA"]
    return jwt.encode(
        claims(**claim_changes),
        chosen.private_key,
        algorithm=chosen.algorithm,
        headers={"kid": kid if kid is not None else chosen.kid},
    )


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hand_made(header: dict[str, Any], payload: dict[str, Any], signature: bytes = b"") -> str:
    head = b64(json.dumps(header).encode())
    body = b64(json.dumps(payload).encode())
    return f"{head}.{body}.{b64(signature)}"


async def refused(token_text: str, match: str, **options: Any) -> None:
    with pytest.raises(InvalidConsoleToken, match=match):
        await verifier(**options).verify(token_text)


@pytest.mark.parametrize("algorithm", ["RS256", "ES256", "EdDSA"])
async def test_good_token_accepted(algorithm: str) -> None:
    result = await verifier().verify(token(KEYS[algorithm], jti="tok-1"))

    assert (result.subject, result.account_id, result.issuer) == ("usr_1", "acc_1", ISSUER)
    assert result.expires_at == NOW + timedelta(seconds=3600)
    assert result.token_id == "tok-1"


@pytest.mark.parametrize("algorithm", ["EdDSA", "ES256"])
async def test_embedded_idp_token_accepted(algorithm: str) -> None:
    key = generate_signing_key(algorithm)  # type: ignore[arg-type]
    issued = issue_console_token("usr_9", "acc_9", ISSUER, AUDIENCE, 600, key, NOW)

    result = await verifier(StaticJwksSource(jwks(key))).verify(issued)

    assert (result.subject, result.account_id) == ("usr_9", "acc_9")


@pytest.mark.parametrize("text", ["", "garbage", "a.b.c", "a.b", "a.b.c.d", "x" * 9000])
async def test_malformed_token_refused(text: str) -> None:
    await refused(text, "malformed|too long")


@pytest.mark.parametrize("api_key", ["rgw_live_sk_" + "0" * 48, "rgw_test_sk_" + "a" * 48])
async def test_api_key_as_token_refused(api_key: str) -> None:
    await refused(api_key, "API key is not a console token")


async def test_expired_token_refused() -> None:
    await refused(token(iat=T - 7200, exp=T - 60), "expired")


async def test_token_expired_within_leeway_accepted() -> None:
    assert await verifier().verify(token(iat=T - 7200, exp=T - 10))


async def test_not_yet_valid_token_refused() -> None:
    await refused(token(nbf=T + 600), "not valid yet")


async def test_token_issued_in_future_refused() -> None:
    await refused(token(iat=T + 600, exp=T + 4000), "issued in the future")


async def test_nan_expiry_refused() -> None:
    await refused(token(exp=float("nan")), "out of range")


async def test_wrong_issuer_refused() -> None:
    await refused(token(iss="https://evil.test"), "another issuer")


async def test_wrong_audience_refused() -> None:
    await refused(token(aud="someone-else"), "another audience")


@pytest.mark.parametrize("claim", ["exp", "iat", "iss", "aud", "sub"])
async def test_missing_required_claim_refused(claim: str) -> None:
    await refused(token(**{claim: None}), f"lacks the {claim} claim")


async def test_missing_account_claim_refused() -> None:
    await refused(token(account_id=None), "lacks the account_id claim")


async def test_unknown_kid_refused_after_one_refresh() -> None:
    source = CountingSource(all_keys())

    with pytest.raises(InvalidConsoleToken, match="unknown key id"):
        await verifier(source).verify(token(kid="kid-nobody-knows"))
    assert source.calls == [False, True]


async def test_rotated_in_key_found_after_refresh() -> None:
    rotated = KEYS["ES256"]
    source = CountingSource([KEYS["EdDSA"].jwk], [KEYS["EdDSA"].jwk, rotated.jwk])

    result = await verifier(source).verify(token(rotated))

    assert result.subject == "usr_1"
    assert source.calls == [False, True]


async def test_alg_none_refused() -> None:
    unsigned = hand_made({"alg": "none", "typ": "JWT", "kid": KEYS["EdDSA"].kid}, claims())

    await refused(unsigned, "algorithm 'none' is not accepted")


async def test_hs256_signed_with_public_key_refused() -> None:
    rsa_key = KEYS["RS256"]
    public_pem = rsa_key.private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = {"alg": "HS256", "typ": "JWT", "kid": rsa_key.kid}
    unsigned = hand_made(header, claims()).rsplit(".", 1)[0]
    mac = hmac.new(public_pem, unsigned.encode(), hashlib.sha256).digest()

    await refused(f"{unsigned}.{b64(mac)}", "algorithm 'HS256' is not accepted")


async def test_algorithm_not_matching_key_type_refused() -> None:
    # An ES256 token whose kid names the Ed25519 key.
    await refused(token(KEYS["ES256"], kid=KEYS["EdDSA"].kid), "does not match its key")


async def test_jwk_alg_not_matching_token_alg_refused() -> None:
    es = KEYS["ES256"]
    source = CountingSource([{**es.jwk, "alg": "ES384"}])

    await refused(token(es), "does not match its key", source=source)


async def test_signature_by_other_key_with_known_kid_refused() -> None:
    impostor = _make_key("EdDSA")

    await refused(token(impostor, kid=KEYS["EdDSA"].kid), "signature does not verify")


async def test_tampered_payload_refused() -> None:
    head, _, signature = token().split(".")
    forged_body = b64(json.dumps(claims(account_id="acc_other")).encode())

    await refused(f"{head}.{forged_body}.{signature}", "signature does not verify")


async def test_token_without_kid_refused() -> None:
    unkeyed = jwt.encode(claims(), KEYS["EdDSA"].private_key, algorithm="EdDSA")

    await refused(unkeyed, "no key id")


async def test_short_rsa_key_refused() -> None:
    weak_private = rsa.generate_private_key(public_exponent=65537, key_size=1024)  # noqa: S505 (the weak key under test)
    weak = SampleKey(
        "RS256",
        "kid-weak",
        weak_private,
        {
            **jwt.algorithms.RSAAlgorithm.to_jwk(weak_private.public_key(), as_dict=True),
            "kid": "kid-weak",
        },
    )

    with pytest.warns(InsecureKeyLengthWarning):
        weak_token = token(weak)

    await refused(weak_token, "too short", source=CountingSource([weak.jwk]))
