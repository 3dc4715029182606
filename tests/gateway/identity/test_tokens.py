"""Console tokens issued by the embedded identity provider."""

from __future__ import annotations

from datetime import UTC, datetime

import jwt
import pytest

from rigway.gateway.identity.signing_keys import generate_signing_key
from rigway.gateway.identity.tokens import issue_console_token

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("algorithm", ["EdDSA", "ES256"])
def test_token_carries_required_claims_and_kid(algorithm: str) -> None:
    key = generate_signing_key(algorithm)  # type: ignore[arg-type]

    token = issue_console_token("usr_1", "acc_1", "https://idp.test", "rigway", 3600, key, NOW)

    assert jwt.get_unverified_header(token)["kid"] == key.kid
    claims = jwt.decode(
        token,
        key.private_key.public_key(),
        algorithms=[algorithm],
        audience="rigway",
        options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
    )
    issued = int(NOW.timestamp())
    assert claims["iss"] == "https://idp.test"
    assert (claims["sub"], claims["account_id"]) == ("usr_1", "acc_1")
    assert (claims["iat"], claims["nbf"], claims["exp"]) == (issued, issued, issued + 3600)
    assert isinstance(claims["jti"], str)


def test_non_positive_ttl_refused() -> None:
    with pytest.raises(ValueError, match="ttl_s"):
        issue_console_token("u", "a", "i", "aud", 0, generate_signing_key(), NOW)
