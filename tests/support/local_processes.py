"""What a test needs to start a process of its own on loopback: a free port for it to
listen on, and the command that runs this checkout's `rigway`."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

__all__ = ["free_port", "rigway_command"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def rigway_command() -> list[str]:
    """The venv's `rigway` script, or the module when the script is not installed."""
    script = Path(sys.executable).parent / "rigway"
    return [str(script)] if script.exists() else [sys.executable, "-m", "rigway.cli.main"]
