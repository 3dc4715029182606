"""Tiny stand-in agent releases: a `rigway` wheel of a few hundred bytes whose
`python -m rigway.cli.main` does one scripted thing, built in a test's tmp dir (nothing
is downloaded), and signed manifests for it.

What a stand-in does when started (by the launcher, with `--install-root` and
`--health-file` among its arguments); each first records its arguments in
`<install root>/ran-<version>`:

- `HEALTHY`: writes its health marker, then runs until SIGTERM (exit 0);
- `FAILS`: exits 3 at once (a release that cannot start);
- `SILENT`: runs until SIGTERM without a health marker (a link that never comes up);
- `restarts_into(v)`: puts `v` on trial in the pointer, as an agent that installed it
  would, and exits with the restart code.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rigway.agent.install_root import RESTART_EXIT_CODE
from rigway.gateway.releases.wheel import pack_wheel, wheel_file_name
from rigway.releases.manifest import Manifest, SignedManifest, sign_manifest

_PROLOGUE = """\
import json
import os
import signal
import sys
from pathlib import Path

VERSION = {version!r}


def _arg(name):
    args = sys.argv[1:]
    return args[args.index(name) + 1] if name in args else None


def _until_sigterm():
    signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGTERM}})
    signal.sigwait({{signal.SIGTERM}})
    sys.exit(0)


def _write(path, text):
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text)
    os.replace(temp, path)


root = Path(_arg("--install-root"))
_write(root / ("ran-" + VERSION), json.dumps(sys.argv[1:]))
"""

HEALTHY = '_write(Path(_arg("--health-file")), str(os.getpid()))\n_until_sigterm()\n'
FAILS = "sys.exit(3)\n"
SILENT = "_until_sigterm()\n"


def restarts_into(version: str) -> str:
    pointer = f'{{"version": {version!r}, "previous": VERSION, "trial": True}}'
    return f'_write(root / "current.json", json.dumps({pointer}))\nsys.exit({RESTART_EXIT_CODE})\n'


def build_wheel(out_dir: Path, version: str, behaviour: str) -> Path:
    """`out_dir/rigway-<version>-py3-none-any.whl` doing `behaviour` when started."""
    package = out_dir / f"src-{version}" / "rigway"
    (package / "cli").mkdir(parents=True)
    (package / "__init__.py").write_text(f"__version__ = {version!r}\n")
    (package / "cli" / "__init__.py").write_text("")
    (package / "cli" / "main.py").write_text(_PROLOGUE.format(version=version) + behaviour)
    wheel = pack_wheel(
        package,
        name="rigway",
        version=version,
        metadata=f"Metadata-Version: 2.1\nName: rigway\nVersion: {version}\n",
        entry_points=None,
        out_dir=out_dir,
    )
    assert wheel.name == wheel_file_name("rigway", version)
    return wheel


def sign_release(
    wheel: Path,
    version: str,
    key: Ed25519PrivateKey,
    download_url: str,
    *,
    now: datetime | None = None,
) -> SignedManifest:
    body = wheel.read_bytes()
    manifest = Manifest(
        version=version,
        download_url=download_url,
        sha256_url=download_url + ".sha256",
        sha256=hashlib.sha256(body).hexdigest(),
        size=len(body),
        expires_at=(now or datetime.now(UTC)) + timedelta(days=7),
    )
    return sign_manifest(manifest.to_fields(), key)
