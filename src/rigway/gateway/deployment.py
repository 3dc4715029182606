"""What a gateway node needs before it serves: the checks `rigway gateway` runs at start,
and the shared key files several nodes must have in common.

A node whose settings name Redis (`redis_url`) is one of several: they share one store
and must share every key that signs or seals something another node reads back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rigway.gateway.identity.signing_keys import KEY_FILE_NAME as CONSOLE_KEY_FILE_NAME
from rigway.gateway.identity.signing_keys import load_or_create_signing_key
from rigway.gateway.releases.builtin import (
    load_or_create_signing_key as load_or_create_release_key,
)
from rigway.gateway.secret_box import SecretBox
from rigway.gateway.settings import GatewaySettings

SECRET_KEY_FILE_NAME = "secret.key"  # noqa: S105 (a file name)
RELEASE_KEY_FILE_NAME = "release-signing.key"


def is_one_of_several_nodes(settings: GatewaySettings) -> bool:
    return settings.redis_url is not None


def start_problems(settings: GatewaySettings) -> list[str]:
    """Why this node must not start, each a sentence naming what to set; [] when none."""
    if not is_one_of_several_nodes(settings):
        return []
    problems: list[str] = []
    if settings.resolved_database_url().startswith("sqlite"):
        problems.append(
            "RIGWAY_DATABASE_URL: nodes sharing RIGWAY_REDIS_URL share one PostgreSQL store"
            " (postgresql+asyncpg://…); an SQLite file cannot be shared"
        )
    if settings.node_url is None:
        problems.append(
            "RIGWAY_NODE_URL: unset; this node's address for the other nodes"
            " (http://<private address>:<port>), which they forward requests to"
        )
    _require_file(
        problems,
        settings.secret_key_file,
        "RIGWAY_SECRET_KEY_FILE",
        "the key that seals webhook secrets, the same file on every node",
    )
    if settings.console_jwks_url is None:
        _require_file(
            problems,
            settings.console_signing_key_file,
            "RIGWAY_CONSOLE_SIGNING_KEY_FILE",
            "the console's signing key, the same file on every node (or"
            " RIGWAY_CONSOLE_JWKS_URL for an external identity provider)",
        )
    if settings.release_manifest_path is None:
        _require_file(
            problems,
            settings.release_signing_key_file,
            "RIGWAY_RELEASE_SIGNING_KEY_FILE",
            "the key that signs the agent release the gateway serves, the same file on"
            " every node (or RIGWAY_RELEASE_MANIFEST for a release signed elsewhere)",
        )
    return problems


def _require_file(problems: list[str], path: Path | None, variable: str, what: str) -> None:
    if path is None:
        problems.append(f"{variable}: unset; {what}")
    elif not path.is_file():
        problems.append(f"{variable}: {path} is not a file; {what}")


@dataclass(frozen=True, slots=True)
class SharedKeyFiles:
    secret_key_file: Path
    console_signing_key_file: Path
    release_signing_key_file: Path

    def environment(self) -> dict[str, str]:
        """The settings that name these files, as environment variables."""
        return {
            "RIGWAY_SECRET_KEY_FILE": str(self.secret_key_file),
            "RIGWAY_CONSOLE_SIGNING_KEY_FILE": str(self.console_signing_key_file),
            "RIGWAY_RELEASE_SIGNING_KEY_FILE": str(self.release_signing_key_file),
        }


def write_shared_key_files(directory: Path) -> SharedKeyFiles:
    """The three key files several nodes share, made in `directory` (0700, files 0600);
    files already there are kept, so running it twice changes nothing."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
    files = SharedKeyFiles(
        secret_key_file=directory / SECRET_KEY_FILE_NAME,
        console_signing_key_file=directory / CONSOLE_KEY_FILE_NAME,
        release_signing_key_file=directory / RELEASE_KEY_FILE_NAME,
    )
    SecretBox.from_file(files.secret_key_file)
    load_or_create_signing_key(directory)
    load_or_create_release_key(files.release_signing_key_file)
    return files
