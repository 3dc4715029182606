"""Gateway settings, built once in `main()` (or a test) and passed in.

Sources, later wins: defaults, an optional TOML file named by `RIGWAY_CONFIG`, then
`RIGWAY_*` environment variables. Nothing here runs at import time.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from limits import parse as parse_rate_limit
from pydantic import BaseModel, ConfigDict, Field, field_validator

from rigway.protocol.ops import IceServer
from rigway.releases.manifest import load_public_key

# The SQLite file in state_dir that is the store when database_url is not set.
LOCAL_DATABASE_NAME = "rigway.db"


class GatewaySettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    state_dir: Path = Path(".rigway")
    database_url: str | None = None  # None: a SQLite file in state_dir
    redis_url: str | None = None
    public_base_url: str = "http://127.0.0.1:8080"

    # Every route's body limit but input's, which follows its batch's bounds (body_limit.py).
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    max_session_age_s: float = Field(default=8 * 3600, gt=0)
    max_concurrent_sessions: int = Field(default=5, ge=1)
    # A session created without idle_timeout_seconds; the bounds the API puts on one.
    default_idle_timeout_s: int = Field(default=900, ge=60, le=3600)

    # Host link
    heartbeat_interval_s: float = Field(default=5.0, gt=0)
    host_gone_grace_s: float = Field(default=10.0, ge=0)
    orphan_grace_s: float = Field(default=30.0, ge=0)
    screen_timeout_s: float = Field(default=5.0, gt=0)
    host_timeout_s: float = Field(default=10.0, gt=0)
    session_start_timeout_s: float = Field(default=10.0, gt=0)
    reaper_interval_s: float = Field(default=1.0, gt=0)

    # Rate limits (`limits` notation: "1200/minute", "10 per 2 minutes"). Requests and
    # input events per API key; requests per account too, all its keys together, so that
    # more keys do not multiply the quota (five keys' worth by default).
    request_rate_limit: str = "1200/minute"
    account_request_rate_limit: str = "6000/minute"
    input_event_rate_limit: str = "3000/minute"
    # Console sign-in attempts (embedded identity provider): per account email, and per
    # client address (an IPv6 client per /64), the address the ASGI server reports.
    sign_in_rate_limit_per_email: str = "10/minute"
    sign_in_rate_limit_per_address: str = "30/minute"

    # Connections (serving.py): a request's head must arrive within the first bound of
    # its first byte, its body within the second of its head; slower clients are closed.
    request_head_timeout_s: float = Field(default=10.0, gt=0, le=300)
    request_body_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    # Proxies (addresses or networks) whose X-Forwarded-For and X-Forwarded-Proto the
    # gateway believes. None by default: otherwise a client on the gateway's own machine
    # could claim any address (and escape the per-address sign-in limit).
    trusted_proxies: list[str] = Field(default_factory=list, max_length=64)

    pairing_code_ttl_s: float = 600.0

    # Console tokens: an external identity provider (issuer, audience, JWKS URL), or the
    # embedded one (console_jwks_url None) that signs with a key in state_dir.
    console_issuer: str | None = None  # None: public_base_url
    console_audience: str = "rigway-console"
    console_jwks_url: str | None = None
    console_account_claim: str = "account_id"
    console_token_ttl_s: int = Field(default=3600, ge=60, le=86400)
    # Encrypts webhook secrets at rest; None: a generated key file in state_dir.
    secret_key_file: Path | None = None
    # A signed release manifest (`rigway release sign`) served at /v1/agent/latest; the
    # file it names, when it sits beside the manifest, is served too. None: the gateway
    # serves its own code, signed by a key it keeps in release_signing_key_file.
    release_manifest_path: Path | None = None
    # The public key that signs release_manifest_path, handed to agents as they pair.
    release_public_key: str | None = None
    release_signing_key_file: Path | None = None  # None: release-signing.key in state_dir
    webhook_max_per_account: int = 5
    # A safety net only: the sessions service wakes the dispatcher as it writes events.
    # The poll finds rows no wake-up announced (another node's, after its crash); every
    # poll is a query, and at 0.5 s it was most of an idle gateway's CPU.
    webhook_poll_interval_s: float = Field(default=5.0, gt=0)

    webhook_allow_private_targets: bool = False
    webhook_ca_bundle: str | None = None
    wake_broadcast: str = "255.255.255.255:9"
    # STUN/TURN servers handed to viewers and agents for live video. None by default:
    # nothing external is contacted unless an operator lists a server here.
    stream_ice_servers: list[IceServer] = Field(default_factory=list, max_length=8)

    def resolved_console_issuer(self) -> str:
        return self.console_issuer if self.console_issuer is not None else self.public_base_url

    @field_validator(
        "request_rate_limit",
        "account_request_rate_limit",
        "input_event_rate_limit",
        "sign_in_rate_limit_per_email",
        "sign_in_rate_limit_per_address",
    )
    @classmethod
    def _is_a_rate_limit(cls, value: str) -> str:
        parse_rate_limit(value)  # a ValueError naming the notation: start-up stops
        return value

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        # RIGWAY_TRUSTED_PROXIES="10.0.0.1, 10.0.1.0/24"
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("release_public_key")
    @classmethod
    def _is_ed25519_key(cls, value: str | None) -> str | None:
        if value is not None:
            load_public_key(value)  # its ManifestKeyError is a ValueError: start-up stops
        return value

    def resolved_release_signing_key_file(self) -> Path:
        if self.release_signing_key_file is not None:
            return self.release_signing_key_file
        return self.state_dir / "release-signing.key"

    def local_database_file(self) -> Path | None:
        """The SQLite file in state_dir, the store unless database_url names another."""
        return self.state_dir / LOCAL_DATABASE_NAME if self.database_url is None else None

    def resolved_database_url(self) -> str:
        if self.database_url is not None:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.state_dir / LOCAL_DATABASE_NAME).resolve()}"


_ENV_FIELDS: dict[str, str] = {
    "RIGWAY_STATE_DIR": "state_dir",
    "RIGWAY_DATABASE_URL": "database_url",
    "RIGWAY_REDIS_URL": "redis_url",
    "RIGWAY_PUBLIC_BASE_URL": "public_base_url",
    "RIGWAY_MAX_SESSION_AGE_SECONDS": "max_session_age_s",
    "RIGWAY_MAX_CONCURRENT_SESSIONS": "max_concurrent_sessions",
    "RIGWAY_DEFAULT_IDLE_TIMEOUT_SECONDS": "default_idle_timeout_s",
    "RIGWAY_REQUEST_RATE_LIMIT": "request_rate_limit",
    "RIGWAY_ACCOUNT_REQUEST_RATE_LIMIT": "account_request_rate_limit",
    "RIGWAY_INPUT_EVENT_RATE_LIMIT": "input_event_rate_limit",
    "RIGWAY_SIGN_IN_RATE_LIMIT_PER_EMAIL": "sign_in_rate_limit_per_email",
    "RIGWAY_SIGN_IN_RATE_LIMIT_PER_ADDRESS": "sign_in_rate_limit_per_address",
    "RIGWAY_HOST_GONE_GRACE_SECONDS": "host_gone_grace_s",
    "RIGWAY_MAX_BODY_BYTES": "max_body_bytes",
    "RIGWAY_REQUEST_HEAD_TIMEOUT_SECONDS": "request_head_timeout_s",
    "RIGWAY_REQUEST_BODY_TIMEOUT_SECONDS": "request_body_timeout_s",
    "RIGWAY_TRUSTED_PROXIES": "trusted_proxies",
    "RIGWAY_ORPHAN_GRACE_SECONDS": "orphan_grace_s",
    "RIGWAY_WEBHOOK_ALLOW_PRIVATE_TARGETS": "webhook_allow_private_targets",
    "RIGWAY_WEBHOOK_CA_BUNDLE": "webhook_ca_bundle",
    "RIGWAY_WAKE_BROADCAST": "wake_broadcast",
    "RIGWAY_CONSOLE_ISSUER": "console_issuer",
    "RIGWAY_CONSOLE_AUDIENCE": "console_audience",
    "RIGWAY_CONSOLE_JWKS_URL": "console_jwks_url",
    "RIGWAY_CONSOLE_ACCOUNT_CLAIM": "console_account_claim",
    "RIGWAY_SECRET_KEY_FILE": "secret_key_file",
    "RIGWAY_RELEASE_MANIFEST": "release_manifest_path",
    "RIGWAY_RELEASE_PUBLIC_KEY": "release_public_key",
    "RIGWAY_RELEASE_SIGNING_KEY_FILE": "release_signing_key_file",
}


def load_settings(environ: Mapping[str, str], **overrides: Any) -> GatewaySettings:
    """Defaults < TOML file (`RIGWAY_CONFIG`) < environment < explicit overrides."""
    values: dict[str, Any] = {}
    config_path = environ.get("RIGWAY_CONFIG")
    if config_path:
        with open(config_path, "rb") as config_file:
            values.update(tomllib.load(config_file))
    for env_name, field_name in _ENV_FIELDS.items():
        if env_name in environ:
            values[field_name] = environ[env_name]
    values.update({k: v for k, v in overrides.items() if v is not None})
    return GatewaySettings.model_validate(values)
