"""Gateway settings, built once in `main()` (or a test) and passed in.

Sources, later wins: defaults, an optional TOML file named by `RIGWAY_CONFIG`, then
`RIGWAY_*` environment variables. Nothing here runs at import time.
"""

from __future__ import annotations

import socket
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from limits import parse as parse_rate_limit
from pydantic import BaseModel, ConfigDict, Field, field_validator

from rigway.protocol.ops import IceServer
from rigway.releases.manifest import load_public_key

# The SQLite file in state_dir that is the store when database_url is not set.
LOCAL_DATABASE_NAME = "rigway.db"


class GatewaySettings(BaseModel):
    """Every field's `description` is its entry in docs/configuration.md, which
    `python -m rigway.gateway.configuration_doc` writes from this model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state_dir: Path = Field(
        default=Path(".rigway"),
        description=(
            "The gateway's own files: the SQLite store (`rigway.db`) unless `database_url`"
            " is set, the console's signing key, the webhook-secret key file and the"
            " release-signing key unless their own settings name other files."
        ),
    )
    database_url: str | None = Field(
        default=None,
        description=(
            "The store, as an SQLAlchemy async URL (`postgresql+asyncpg://…`,"
            " `sqlite+aiosqlite:///…`). Unset: the SQLite file `rigway.db` in `state_dir`."
            " Several gateway nodes need one PostgreSQL store."
        ),
    )
    redis_url: str | None = Field(
        default=None,
        description=(
            "Redis (`redis://…`) for rate-limit counts shared by every node. Unset: counts"
            " live in the process."
        ),
    )
    public_base_url: str = Field(
        default="http://127.0.0.1:8080",
        description=(
            "The URL clients reach the gateway at: the base of the agent release download"
            " links, the console tokens' issuer unless `console_issuer` is set, and, when"
            " set explicitly, the base of live-view URLs."
        ),
    )

    # input's limit follows its batch's bounds instead (body_limit.py).
    max_body_bytes: int = Field(
        default=64 * 1024,
        ge=1024,
        description="A request body's limit in bytes (larger: 413), on every route but input.",
    )
    max_session_age_s: float = Field(
        default=8 * 3600,
        gt=0,
        description="A session ends `max_age` this many seconds after it started.",
    )
    max_concurrent_sessions: int = Field(
        default=5,
        ge=1,
        description="Active sessions per account; one more is `429 concurrency_limit`.",
    )
    default_idle_timeout_s: int = Field(
        default=900,
        ge=60,
        le=3600,
        description=(
            "The idle timeout of a session created without `idle_timeout_seconds`, in"
            " seconds (60..3600, the bounds the API puts on one)."
        ),
    )

    # Host link
    heartbeat_interval_s: float = Field(
        default=5.0,
        gt=0,
        description=(
            "Seconds between the gateway's pings on a host link; a host silent for three"
            " intervals is disconnected."
        ),
    )
    host_gone_grace_s: float = Field(
        default=10.0,
        ge=0,
        description=(
            "Seconds a session waits for its host's link to come back before it ends `host_gone`."
        ),
    )
    orphan_grace_s: float = Field(
        default=30.0,
        ge=0,
        description=(
            "At start, seconds the gateway waits for the host of a session still active"
            " in the store to connect before it ends the session `timeout`."
        ),
    )
    orphan_sweep_interval_s: float = Field(
        default=5.0,
        gt=0,
        description=(
            "Several nodes: seconds between the orphan sweeper's passes, which end"
            " `host_gone` the sessions whose host no node has held for"
            " `host_gone_grace_s` (a node that died took its timers with it)."
        ),
    )
    screen_timeout_s: float = Field(
        default=5.0,
        gt=0,
        description=(
            "Seconds the host has to answer a screenshot or an observe leg (then"
            " `504 host_timeout`)."
        ),
    )
    host_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description=(
            "Seconds the host has to answer other requests (then `504 host_timeout`); an"
            " input batch or a wait adds the waits it asks for."
        ),
    )
    session_start_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description=(
            "Seconds the host has to acknowledge a new session; otherwise the session is"
            " stored `failed`."
        ),
    )
    reaper_interval_s: float = Field(
        default=1.0,
        gt=0,
        description="Seconds between checks for sessions past their idle timeout or maximum age.",
    )

    # Rate limits, in the `limits` notation ("1200/minute", "10 per 2 minutes"). Per
    # account too, all its keys together, so that more keys do not multiply the quota.
    request_rate_limit: str = Field(
        default="1200/minute",
        description="Requests per API key (`limits` notation: `1200/minute`, `10 per 2 minutes`).",
    )
    account_request_rate_limit: str = Field(
        default="6000/minute",
        description=(
            "Requests per account, all its keys together (five keys' worth by default), so"
            " that more keys do not multiply the quota."
        ),
    )
    input_event_rate_limit: str = Field(
        default="3000/minute",
        description="Input events per API key; each event of a batch counts.",
    )
    sign_in_rate_limit_per_email: str = Field(
        default="10/minute",
        description="Console sign-in attempts per account email (embedded identity provider).",
    )
    sign_in_rate_limit_per_address: str = Field(
        default="30/minute",
        description=(
            "Console sign-in attempts per client address (an IPv6 client per /64): the"
            " connection's peer, or the forwarded address from a trusted proxy."
        ),
    )

    # Connections (serving.py)
    request_head_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description=(
            "Seconds a request's head (request line and headers) has to arrive after its"
            " first byte; slower clients get `408` and a close."
        ),
    )
    request_body_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description=(
            "Seconds a request's body has to arrive after its head; slower clients are"
            " closed and nothing the request asked for is done."
        ),
    )
    keep_alive_s: int = Field(
        default=75,
        ge=1,
        le=3600,
        description=(
            "Seconds an idle connection is kept open for the client's next request."
            " Longer than the idle time of common clients and load balancers (httpx"
            " 5 s, AWS ALB 60 s), so that it is they who close an idle connection: a"
            " server that closes first races the request the client is sending on it."
        ),
    )
    node_url: str | None = Field(
        default=None,
        description=(
            "This node's address for the other nodes of the service (`http://10.0.0.5:8080`:"
            " http or https, a host, no path), which they forward requests for the rigs it"
            " holds to. Needed with `redis_url`."
        ),
    )
    node_name: str | None = Field(
        default=None,
        description=(
            "This node's name, the `node` label of every metric. Unset: the machine's host name."
        ),
    )
    shutdown_grace_s: float = Field(
        default=30.0,
        ge=0,
        le=600,
        description=(
            "On SIGTERM (`rigway gateway`), seconds the node waits for its requests in"
            " flight to finish (it reports not ready meanwhile) before it closes its host"
            " links, which tells their agents to reconnect, and stops."
        ),
    )
    # None by default: otherwise a client on the gateway's own machine could claim any
    # address (and escape the per-address sign-in limit).
    trusted_proxies: list[str] = Field(
        default_factory=list,
        max_length=64,
        description=(
            "Proxies (addresses or networks, comma-separated in the environment) whose"
            " `X-Forwarded-For` and `X-Forwarded-Proto` the gateway believes. None by"
            " default."
        ),
    )

    pairing_code_ttl_s: float = Field(
        default=600.0, description="Seconds a rig pairing code stays valid."
    )

    # Console tokens: an external identity provider (issuer, audience, JWKS URL), or the
    # embedded one (console_jwks_url None) that signs with a key in state_dir.
    console_issuer: str | None = Field(
        default=None,
        description="The console tokens' issuer (`iss`). Unset: `public_base_url`.",
    )
    console_audience: str = Field(
        default="rigway-console", description="The console tokens' audience (`aud`)."
    )
    console_jwks_url: str | None = Field(
        default=None,
        description=(
            "An external identity provider's JWKS URL, whose keys sign console tokens."
            " Unset: the embedded identity provider, which signs with a key in `state_dir`"
            " and serves `POST /v1/console/sign-in`."
        ),
    )
    console_account_claim: str = Field(
        default="account_id",
        description="The console token claim that names the account.",
    )
    console_token_ttl_s: int = Field(
        default=3600,
        ge=60,
        le=86400,
        description="Seconds a console token from the embedded identity provider is valid.",
    )
    secret_key_file: Path | None = Field(
        default=None,
        description=(
            "The key that encrypts webhook secrets at rest. Unset: a key file the gateway"
            " generates in `state_dir`."
        ),
    )
    console_signing_key_file: Path | None = Field(
        default=None,
        description=(
            "The embedded identity provider's signing key (PEM, Ed25519 or P-256, mode"
            " 0600). Unset: `console-signing-key.pem` in `state_dir`, created at first"
            " start. Several nodes need the same file."
        ),
    )
    release_manifest_path: Path | None = Field(
        default=None,
        description=(
            "A signed release manifest (`rigway release sign`) served at"
            " `/v1/agent/latest`; the file it names, when it sits beside the manifest, is"
            " served too. Unset: the gateway serves its own code, signed by the key in"
            " `release_signing_key_file`."
        ),
    )
    release_public_key: str | None = Field(
        default=None,
        description=(
            "The Ed25519 public key that signs `release_manifest_path`, handed to agents as"
            " they pair."
        ),
    )
    release_signing_key_file: Path | None = Field(
        default=None,
        description=(
            "The key that signs the gateway's own release. Unset: `release-signing.key` in"
            " `state_dir`."
        ),
    )
    webhook_max_per_account: int = Field(
        default=5, description="Webhooks per account; one more is `409 webhook_limit`."
    )
    # A safety net only: the sessions service wakes the dispatcher as it writes events.
    # The poll finds rows no wake-up announced (another node's, after its crash); every
    # poll is a query, and at 0.5 s it was most of an idle gateway's CPU.
    webhook_poll_interval_s: float = Field(
        default=5.0,
        gt=0,
        description=(
            "Seconds between polls for webhook deliveries no wake-up announced (another"
            " node's, after its crash)."
        ),
    )

    webhook_allow_private_targets: bool = Field(
        default=False,
        description=(
            "Let webhook URLs use plain http and reach private and loopback addresses"
            " (local development and tests only); metadata addresses stay refused."
        ),
    )
    webhook_ca_bundle: str | None = Field(
        default=None,
        description=(
            "A CA bundle (PEM file) webhook deliveries trust besides the system's trust"
            " store (a private CA)."
        ),
    )
    wake_broadcast: str = Field(
        default="255.255.255.255:9",
        description=(
            "Where the gateway sends a Wake-on-LAN magic packet (`host:port`) when no online"
            " rig of the account shares the sleeping rig's LAN."
        ),
    )
    # None by default: nothing external is contacted unless an operator lists a server.
    stream_ice_servers: list[IceServer] = Field(
        default_factory=list,
        max_length=8,
        description=(
            "STUN/TURN servers handed to viewers and agents for live video (config file"
            " only: a list of tables with `urls`, `username`, `credential`). None by"
            " default."
        ),
    )
    recording_retention_s: float = Field(
        default=7 * 86400,
        gt=0,
        description=(
            "How long a session's recording (`record: true`) is kept after the session"
            " ended; then the cleaner deletes it and it answers `404 recording_not_found`."
        ),
    )
    recording_max_bytes: int = Field(
        default=200 * 1024 * 1024,
        ge=1024,
        description=(
            "A recording's size cap (its JPEGs and step records, in bytes); steps beyond"
            " it are dropped and counted in the archive's `manifest.json`."
        ),
    )
    recording_max_steps: int = Field(
        default=10_000,
        ge=1,
        description=(
            "A recording's step cap (screenshots, observes and input batches); steps"
            " beyond it are dropped and counted as for `recording_max_bytes`."
        ),
    )
    recording_cleanup_interval_s: float = Field(
        default=600.0,
        gt=0,
        description="Seconds between the cleaner's passes over expired recordings.",
    )

    def resolved_node_name(self) -> str:
        return self.node_name if self.node_name is not None else socket.gethostname()

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

    @field_validator("node_url")
    @classmethod
    def _is_a_node_address(cls, value: str | None) -> str | None:
        # The other nodes dial this address's scheme, host and port only; anything else
        # (no scheme: `10.0.0.5:8080`, a path) would fail or be dropped only when a
        # request is first forwarded here, far from the setting that caused it.
        if value is None:
            return None
        parts = urlsplit(value)
        try:
            port_ok = parts.port is None or parts.port > 0
        except ValueError:
            port_ok = False
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or not port_ok
            or parts.path not in ("", "/")
            or parts.query
            or parts.fragment
        ):
            raise ValueError(
                "RIGWAY_NODE_URL must be this node's http:// or https:// address with a host"
                " and no path, like http://10.0.0.5:8080"
            )
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


# The environment variable of each setting read from the environment (docs/configuration.md).
# Kept by hand rather than derived through pydantic-settings: the names do not follow the
# fields' (`_s` is `_SECONDS`, `release_manifest_path` is `RIGWAY_RELEASE_MANIFEST`) and
# some settings are the config file's only, so every field would need an alias anyway.
ENVIRONMENT_VARIABLES: dict[str, str] = {
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
    "RIGWAY_KEEP_ALIVE_SECONDS": "keep_alive_s",
    "RIGWAY_TRUSTED_PROXIES": "trusted_proxies",
    "RIGWAY_ORPHAN_GRACE_SECONDS": "orphan_grace_s",
    "RIGWAY_ORPHAN_SWEEP_INTERVAL_SECONDS": "orphan_sweep_interval_s",
    "RIGWAY_WEBHOOK_ALLOW_PRIVATE_TARGETS": "webhook_allow_private_targets",
    "RIGWAY_WEBHOOK_CA_BUNDLE": "webhook_ca_bundle",
    "RIGWAY_WAKE_BROADCAST": "wake_broadcast",
    "RIGWAY_CONSOLE_ISSUER": "console_issuer",
    "RIGWAY_CONSOLE_AUDIENCE": "console_audience",
    "RIGWAY_CONSOLE_JWKS_URL": "console_jwks_url",
    "RIGWAY_CONSOLE_ACCOUNT_CLAIM": "console_account_claim",
    "RIGWAY_SECRET_KEY_FILE": "secret_key_file",
    "RIGWAY_CONSOLE_SIGNING_KEY_FILE": "console_signing_key_file",
    "RIGWAY_SHUTDOWN_GRACE_SECONDS": "shutdown_grace_s",
    "RIGWAY_NODE_NAME": "node_name",
    "RIGWAY_NODE_URL": "node_url",
    "RIGWAY_RELEASE_MANIFEST": "release_manifest_path",
    "RIGWAY_RELEASE_PUBLIC_KEY": "release_public_key",
    "RIGWAY_RELEASE_SIGNING_KEY_FILE": "release_signing_key_file",
    "RIGWAY_RECORDING_RETENTION_SECONDS": "recording_retention_s",
    "RIGWAY_RECORDING_MAX_BYTES": "recording_max_bytes",
    "RIGWAY_RECORDING_MAX_STEPS": "recording_max_steps",
}


def load_settings(environ: Mapping[str, str], **overrides: Any) -> GatewaySettings:
    """Defaults < TOML file (`RIGWAY_CONFIG`) < environment < explicit overrides."""
    values: dict[str, Any] = {}
    config_path = environ.get("RIGWAY_CONFIG")
    if config_path:
        with open(config_path, "rb") as config_file:
            values.update(tomllib.load(config_file))
    for env_name, field_name in ENVIRONMENT_VARIABLES.items():
        if env_name in environ:
            values[field_name] = environ[env_name]
    values.update({k: v for k, v in overrides.items() if v is not None})
    return GatewaySettings.model_validate(values)
