"""`.rigway/local.json`: the credentials `rigway up` writes, found from the working directory.

The clients use it last, after their arguments and the environment variables, so right
after `make up` a bare `Rigway()` talks to the local gateway. The file is looked for in
`$RIGWAY_STATE_DIR` when that is set (as `rigway up` and the CLI do), else in `.rigway/`
of the working directory or of the nearest parent that has one, so a script run from a
subfolder of the checkout finds it too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "LOCAL_JSON_NAME",
    "LOCAL_STATE_DIR_NAME",
    "STATE_DIR_ENV",
    "LocalConfig",
    "find_local_json",
    "load_local_config",
    "read_local_json",
]

LOCAL_STATE_DIR_NAME = ".rigway"
LOCAL_JSON_NAME = "local.json"
STATE_DIR_ENV = "RIGWAY_STATE_DIR"


@dataclass(frozen=True)
class LocalConfig:
    """What a `local.json` holds that a client can use; a field is None when absent."""

    path: Path | None = None
    api_key: str | None = None
    base_url: str | None = None
    console_token: str | None = None
    rig_ids: tuple[str, ...] = field(default_factory=tuple)


def find_local_json(start: Path, environ: Mapping[str, str] | None = None) -> Path | None:
    """The `local.json` a client in `start` should read, or None when there is none.

    `$RIGWAY_STATE_DIR/local.json` when that variable is set (no walking then: the
    variable names the one directory to use); else `.rigway/local.json` in `start` or
    its nearest parent that has one.
    """
    env = os.environ if environ is None else environ
    state_dir = env.get(STATE_DIR_ENV)
    if state_dir:
        candidate = Path(state_dir) / LOCAL_JSON_NAME
        return candidate if candidate.is_file() else None
    for directory in (start, *start.parents):
        candidate = directory / LOCAL_STATE_DIR_NAME / LOCAL_JSON_NAME
        if candidate.is_file():
            return candidate
    return None


def read_local_json(path: Path) -> dict[str, Any]:
    """The JSON object in `path`, or {} when it is absent, unreadable or not an object.

    A broken file is ignored rather than fatal: the client then says which credential
    is missing and every way to pass it, which helps more than a JSON parse error.
    """
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _text(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    return value if isinstance(value, str) and value != "" else None


def load_local_config(
    start: Path | None = None, environ: Mapping[str, str] | None = None
) -> LocalConfig:
    """The local config seen from `start` (default: the working directory); empty if none."""
    path = find_local_json(Path.cwd() if start is None else start, environ)
    if path is None:
        return LocalConfig()
    data = read_local_json(path)
    rig_ids = data.get("rig_ids")
    return LocalConfig(
        path=path,
        api_key=_text(data, "api_key"),
        base_url=_text(data, "base_url"),
        console_token=_text(data, "console_token"),
        rig_ids=tuple(r for r in rig_ids if isinstance(r, str))
        if isinstance(rig_ids, list)
        else (),
    )
