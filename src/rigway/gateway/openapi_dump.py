"""Print the gateway's OpenAPI document, as `/openapi.json` serves it.

    python -m rigway.gateway.openapi_dump > docs/openapi.json

`docs/openapi.json` is this output, committed, so that clients can be generated and
changes reviewed without running a gateway; a test fails when the two drift apart.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from rigway.gateway.app import create_app
from rigway.gateway.settings import GatewaySettings

__all__ = ["openapi_document", "openapi_text"]


def openapi_document() -> dict[str, Any]:
    """The schema of an app built on default settings. Building it writes a state
    directory (keys, an empty store), so it gets a temporary one of its own."""
    with tempfile.TemporaryDirectory(prefix="rigway-openapi-") as state_dir:
        app = create_app(GatewaySettings(state_dir=Path(state_dir)))
        return app.openapi()


def openapi_text() -> str:
    return json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    sys.stdout.write(openapi_text())


if __name__ == "__main__":
    main()
