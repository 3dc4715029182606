"""Console tokens issued by the embedded identity provider.

A console token is a JWT signed with the embedded signing key, `kid` in its header, with
the claims the gateway's `ConsoleTokenVerifier` requires: `iss`, `aud`, `sub`, `iat`,
`nbf`, `exp`, plus `account_id` and a random `jti`.
"""

from __future__ import annotations

import secrets
from datetime import datetime

import jwt

from rigway.gateway.identity.signing_keys import SigningKey

__all__ = ["ACCOUNT_CLAIM", "issue_console_token"]

ACCOUNT_CLAIM = "account_id"


def issue_console_token(
    subject: str,
    account_id: str,
    issuer: str,
    audience: str,
    ttl_s: int,
    key: SigningKey,
    now: datetime,
) -> str:
    """A signed console token for `subject` in `account_id`, valid `ttl_s` from `now`."""
    if ttl_s <= 0:
        raise ValueError("ttl_s must be positive")
    issued_at = int(now.timestamp())
    claims = {
        "iss": issuer,
        "aud": audience,
        "sub": subject,
        ACCOUNT_CLAIM: account_id,
        "iat": issued_at,
        "nbf": issued_at,
        "exp": issued_at + ttl_s,
        "jti": secrets.token_urlsafe(16),
    }
    return jwt.encode(
        claims, key.private_key, algorithm=key.algorithm, headers={"kid": key.kid, "typ": "JWT"}
    )
