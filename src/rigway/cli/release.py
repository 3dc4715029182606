"""`rigway release`: operators' tools for signed host agent releases.

`keygen` writes an Ed25519 key pair (private key mode 0600); `sign` hashes the release
file and writes a signed manifest for the gateway's `RIGWAY_RELEASE_MANIFEST`.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer

from rigway.releases.manifest import (
    Manifest,
    ManifestError,
    file_sha256_and_size,
    generate_private_key,
    load_private_key,
    private_key_to_text,
    public_key_to_text,
    sign_manifest,
)

release_app = typer.Typer(help="Sign host agent releases.", no_args_is_help=True)


@release_app.command("keygen")
def keygen(
    private_key_file: Annotated[Path, typer.Option(help="Where to write the private key.")],
) -> None:
    """Create a signing key; prints the public key agents must trust."""
    key = generate_private_key()
    fd = os.open(private_key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(private_key_to_text(key) + "\n")
    typer.echo(public_key_to_text(key.public_key()))


@release_app.command("sign")
def sign(
    file: Annotated[Path, typer.Option(help="The release file (wheel or installer).")],
    version: Annotated[str, typer.Option(help="Dotted numeric version, e.g. 1.4.0.")],
    download_url: Annotated[str, typer.Option(help="https URL agents download from.")],
    sha256_url: Annotated[str, typer.Option(help="https URL of the .sha256 file.")],
    private_key_file: Annotated[Path, typer.Option(help="The Ed25519 private key.")],
    out: Annotated[Path, typer.Option(help="Where to write the signed manifest.")],
    expires_in_days: Annotated[int, typer.Option(min=1, max=365)] = 30,
) -> None:
    """Write a signed manifest for `file`."""
    sha256, size = file_sha256_and_size(file)
    expires_at = datetime.now(UTC).replace(microsecond=0) + timedelta(days=expires_in_days)
    manifest = Manifest(
        version=version,
        download_url=download_url,
        sha256_url=sha256_url,
        sha256=sha256,
        size=size,
        expires_at=expires_at,
    )
    try:
        signed = sign_manifest(
            manifest.to_fields(), load_private_key(private_key_file.read_text().strip())
        )
    except ManifestError as exc:
        typer.echo(f"cannot sign: {exc}", err=True)
        raise typer.Exit(code=2) from exc
    out.write_bytes(signed.to_json())
    typer.echo(f"signed {version} ({size} bytes, sha256 {sha256[:12]}…) → {out}")
