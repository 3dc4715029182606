"""Starts `rigway up` in a subprocess (gateway + agent processes, as a user runs it) and
hands back its credentials; the benchmark client runs in its own process."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _read_json(path: Path) -> dict[str, Any] | None:
    # `rigway up` creates the file, then writes it: an empty or half file is "not yet".
    try:
        loaded: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return loaded


# Quotas a benchmark does not hit: one sends well past the default 1200 requests a
# minute per key, and a 429 timed as a screenshot would flatter the figures.
BENCH_QUOTAS = {
    "RIGWAY_REQUEST_RATE_LIMIT": "100000/minute",
    "RIGWAY_INPUT_EVENT_RATE_LIMIT": "100000/minute",
}


@contextlib.contextmanager
def rigway_up(
    desktop: str = "sim",
    timeout_s: float = 60.0,
    env: Mapping[str, str] | None = None,
    options: tuple[str, ...] = (),
) -> Iterator[dict[str, Any]]:
    """`env` is the environment of `rigway up` and its agents (default: ours), e.g. the
    DISPLAY and DBUS_SESSION_BUS_ADDRESS of a test desktop for `--desktop x11`; the
    benchmark quotas are added to it. `options` are more of `rigway up`'s (e.g.
    `--reduce-motion`)."""
    with tempfile.TemporaryDirectory(prefix="rigway-bench-") as state_dir:
        port = _free_port()
        command = [
            sys.executable, "-m", "rigway.cli.main", "up",
            "--port", str(port), "--state-dir", state_dir, "--desktop", desktop, *options,
        ]  # fmt: skip
        environment = {**(os.environ if env is None else env), **BENCH_QUOTAS}
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=environment)
        local_json = Path(state_dir) / "local.json"
        try:
            deadline = time.monotonic() + timeout_s
            while (credentials := _read_json(local_json)) is None:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("rigway up did not come up")
                time.sleep(0.05)
            yield credentials
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
