"""A feature's page assets (scripts, styles): content-versioned URLs and their handler.

The console and the stream viewer each ship a small folder of them. A URL carries a hash
of the file's content, so browsers may cache it for a day and still never run a stale
script after an upgrade.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from starlette.responses import FileResponse, Response

_MEDIA_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
_CACHE = "public, max-age=86400"


class StaticFiles:
    def __init__(self, folder: Path, url_prefix: str) -> None:
        """Every file of `folder` (read once, at start), served under `url_prefix`."""
        self._files = {path.name: path for path in folder.iterdir() if path.is_file()}
        self._versions = {
            name: hashlib.sha256(path.read_bytes()).hexdigest()[:12]
            for name, path in self._files.items()
        }
        self._url_prefix = url_prefix.rstrip("/")

    def url(self, name: str) -> str:
        return f"{self._url_prefix}/{name}?v={self._versions[name]}"

    def response(self, name: str) -> Response:
        path = self._files.get(name)
        if path is None:
            return Response("not found", status_code=404, media_type="text/plain")
        return FileResponse(
            path,
            media_type=_MEDIA_TYPES.get(path.suffix, "application/octet-stream"),
            headers={"Cache-Control": _CACHE},
        )
