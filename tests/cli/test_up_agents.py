"""`rigway up` waits for its local agents: an agent that exits ends the wait at once."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from rigway.cli.up import AgentStartError, wait_online
from rigway.gateway.hostlink.registry import HostRegistry


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


def _python(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)


async def test_an_agent_that_exits_ends_the_wait_with_its_exit_code(
    processes: list[subprocess.Popen[bytes]],
) -> None:
    processes.append(_python("import time; time.sleep(60)"))  # still starting
    processes.append(_python("raise SystemExit(3)"))  # gave up
    # Nobody ever connects to this registry, and the timeout's message differs: only the
    # exit can end the wait with this error.
    with pytest.raises(AgentStartError, match=r"1 local agent\(s\) exited .*exit code 3"):
        await wait_online(HostRegistry(), ["rig_a", "rig_b"], processes, timeout_s=60)


async def test_agents_that_never_connect_time_out_with_a_message(
    processes: list[subprocess.Popen[bytes]],
) -> None:
    processes.append(_python("import time; time.sleep(60)"))  # never connects, never exits
    with pytest.raises(AgentStartError, match=r"did not come online within 0\.5 s"):
        await wait_online(HostRegistry(), ["rig_a"], processes, timeout_s=0.5)


async def test_no_rigs_means_nothing_to_wait_for() -> None:
    await wait_online(HostRegistry(), [], [], timeout_s=1)
