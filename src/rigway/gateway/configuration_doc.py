"""docs/configuration.md, written from the settings model so the page cannot drift.

`python -m rigway.gateway.configuration_doc` rewrites the page; `--check` exits 1 when
the page on disk differs from what the model gives (tests/docs/test_configuration_doc.py
runs the same comparison). Each row comes from a `GatewaySettings` field: its name (the
config file's key), its environment variable (`ENVIRONMENT_VARIABLES`), its default and its
`description`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from rigway.gateway.settings import ENVIRONMENT_VARIABLES, GatewaySettings

__all__ = ["DOC_PATH", "main", "render"]

DOC_PATH = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"

_HEADER = """\
# Configuration

<!-- Generated from src/rigway/gateway/settings.py by
     `python -m rigway.gateway.configuration_doc`: edit the model, not this page. -->

The gateway reads its settings once, at start, from these sources (later wins):

1. the defaults below;
2. a TOML file named by `RIGWAY_CONFIG`, whose keys are the settings' names
   (`max_concurrent_sessions = 10`);
3. the `RIGWAY_*` environment variables below;
4. for `rigway up`, its options: `--state-dir`, and `--host`/`--port`, which set
   `public_base_url`.

A value that does not validate (out of bounds, a rate limit that does not parse, an
unknown name in the TOML file) stops start-up with a message that names it. Settings
without an environment variable are set in the TOML file. Durations are in seconds.
Running several nodes, proxies, backups and upgrades: `docs/operations.md`.

| setting | environment variable | default | meaning |
|---|---|---|---|
"""

_FOOTER = """
## Clients and agents

These are read by the SDK, the `rigway` command and the MCP server (`docs/sdk.md`), not
by the gateway: `RIGWAY_API_KEY`, `RIGWAY_BASE_URL`, `RIGWAY_CONSOLE_TOKEN`,
`RIGWAY_STATE_DIR` (where to look for `local.json`), `RIGWAY_MCP_AUTH_TOKEN` (`rigway mcp
--http`). The host agent's settings are its command's options (`docs/agent.md`).
"""


def render() -> str:
    """The page, as the model describes it today."""
    fields_by_env = {field: env for env, field in ENVIRONMENT_VARIABLES.items()}
    rows = [
        _row(name, info, fields_by_env.get(name))
        for name, info in GatewaySettings.model_fields.items()
    ]
    return _HEADER + "".join(rows) + _FOOTER


def _row(name: str, info: FieldInfo, env_name: str | None) -> str:
    env_cell = f"`{env_name}`" if env_name is not None else "(config file only)"
    if info.description is None:
        raise ValueError(f"GatewaySettings.{name} has no description")
    meaning = info.description.replace("|", "\\|")
    return f"| `{name}` | {env_cell} | {_default(info)} | {meaning} |\n"


def _default(info: FieldInfo) -> str:
    value = info.get_default(call_default_factory=True, validated_data={})
    if value is PydanticUndefined or value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list) and not value:
        return "none"
    return f"`{value}`"


def main(argv: Sequence[str] = ()) -> int:
    page = render()
    if "--check" in argv:
        if DOC_PATH.read_text(encoding="utf-8") != page:
            print(f"{DOC_PATH} is out of date: run python -m rigway.gateway.configuration_doc")
            return 1
        return 0
    DOC_PATH.write_text(page, encoding="utf-8")
    print(f"wrote {DOC_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
