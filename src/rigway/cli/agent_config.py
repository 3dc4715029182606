"""What `rigway agent pair` remembers for `agent run`, `install` and `kill`: the gateway
URL and the token file, in `<agent state dir>/agent.json`; and the owner's choices for
`agent run` that the file may hold (`"reduce_motion": true`, see `reduce_motion_choice`).

The agent state dir is `--state-dir`, else `RIGWAY_AGENT_STATE_DIR`, else per user:
`%LOCALAPPDATA%\\Rigway\\rig` on Windows, `$XDG_STATE_HOME/rigway` (or
`~/.local/state/rigway`) elsewhere. The token itself never goes in `agent.json`: only
the path of the file that holds it (mode 0600).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath
from typing import Annotated

import typer

__all__ = [
    "AGENT_CONFIG_FILE",
    "AgentConfig",
    "AgentStateDirOption",
    "default_agent_state_dir",
    "read_agent_config",
    "reduce_motion_choice",
    "write_agent_config",
]

AGENT_CONFIG_FILE = "agent.json"

AgentStateDirOption = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        envvar="RIGWAY_AGENT_STATE_DIR",
        show_envvar=True,
        help="Where `pair` keeps agent.json and, by default, the rig token "
        "(default: ~/.local/state/rigway; %LOCALAPPDATA%\\Rigway\\rig on Windows).",
    ),
]


def default_agent_state_dir(
    platform: str, environment: Mapping[str, str], home: PurePath
) -> PurePath:
    """The per-user folder of the agent's own state (not its installed versions, which
    live under the install root)."""
    if platform == "win32":
        local = PureWindowsPath(environment.get("LOCALAPPDATA", ""))
        if not local.is_absolute():
            local = PureWindowsPath(home) / "AppData" / "Local"
        return local / "Rigway" / "rig"
    # The XDG spec: an unset or relative XDG_STATE_HOME means ~/.local/state.
    state_home = PurePosixPath(environment.get("XDG_STATE_HOME", ""))
    if not state_home.is_absolute():
        state_home = PurePosixPath(home) / ".local" / "state"
    return state_home / "rigway"


def agent_state_dir(chosen: Path | None) -> Path:
    """`--state-dir` when given, else this user's default."""
    if chosen is not None:
        return chosen
    return Path(default_agent_state_dir(sys.platform, dict(os.environ), Path.home()))


@dataclass(frozen=True)
class AgentConfig:
    """What pairing remembered: where the gateway is and which file holds the token."""

    gateway: str | None = None
    token_file: Path | None = None
    # The desktop's UI animations off while a session is live; None: not chosen.
    reduce_motion: bool | None = None


def read_agent_config(state_dir: Path) -> AgentConfig:
    """`<state dir>/agent.json`, or an empty config when it is absent or unreadable."""
    try:
        data = json.loads((state_dir / AGENT_CONFIG_FILE).read_text())
    except (OSError, ValueError):
        return AgentConfig()
    if not isinstance(data, dict):
        return AgentConfig()
    gateway = data.get("gateway")
    token_file = data.get("token_file")
    reduce_motion = data.get("reduce_motion")
    return AgentConfig(
        gateway=gateway if isinstance(gateway, str) and gateway else None,
        token_file=Path(token_file) if isinstance(token_file, str) and token_file else None,
        reduce_motion=reduce_motion if isinstance(reduce_motion, bool) else None,
    )


def write_agent_config(state_dir: Path, config: AgentConfig) -> Path:
    """Remember `config` for the next `agent run`; returns the file written. A choice
    left None keeps what the file says (pairing again keeps `reduce_motion`)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / AGENT_CONFIG_FILE
    token_file = None if config.token_file is None else str(config.token_file.absolute())
    data: dict[str, object] = {"gateway": config.gateway, "token_file": token_file}
    reduce_motion = config.reduce_motion
    if reduce_motion is None:
        reduce_motion = read_agent_config(state_dir).reduce_motion
    if reduce_motion is not None:
        data["reduce_motion"] = reduce_motion
    path.write_text(json.dumps(data, indent=2))
    return path


def reduce_motion_choice(flag: bool | None, state_dir: Path) -> bool:
    """`--reduce-motion`/`--no-reduce-motion` when given, else `"reduce_motion"` in
    agent.json, else off."""
    if flag is not None:
        return flag
    return read_agent_config(state_dir).reduce_motion is True


def default_token_file(state_dir: Path) -> Path:
    """Where `pair` keeps the rig token unless told: in the agent state dir."""
    return state_dir / "rig.token"


def resolve_run_target(
    gateway: str | None, token_file: Path | None, state_dir: Path
) -> tuple[str, Path]:
    """The gateway and token file of `agent run`/`install`: each option, else what `pair`
    remembered; exit 2 naming both ways when one is found nowhere."""
    remembered = read_agent_config(state_dir)
    chosen_gateway = gateway if gateway is not None else remembered.gateway
    chosen_token_file = token_file if token_file is not None else remembered.token_file
    config_file = state_dir / AGENT_CONFIG_FILE
    if chosen_gateway is None:
        typer.echo(
            f"no gateway: pass --gateway, or pair first (`rigway agent pair` writes {config_file})",
            err=True,
        )
        raise typer.Exit(code=2)
    if chosen_token_file is None:
        typer.echo(
            f"no token file: pass --token-file, or pair first (`rigway agent pair` writes "
            f"{config_file})",
            err=True,
        )
        raise typer.Exit(code=2)
    return chosen_gateway, chosen_token_file
