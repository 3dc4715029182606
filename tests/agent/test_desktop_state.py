"""Desktop state in the agent core: the sim's settable state, input refused while the
desktop is not "normal" (nothing sent to it, held input let go), and the state sampled
with every dirty take."""

from __future__ import annotations

import pytest

from rigway.agent.backends.base import DESKTOP_STATES, DesktopState
from rigway.agent.backends.sim import SimDesktop


def test_sim_starts_normal() -> None:
    assert SimDesktop().desktop_state() == "normal"


@pytest.mark.parametrize("state", DESKTOP_STATES)
def test_sim_state_set_is_reported(state: DesktopState) -> None:
    sim = SimDesktop()
    sim.set_desktop_state(state)
    assert sim.desktop_state() == state


def test_sim_refuses_an_unknown_state_name() -> None:
    with pytest.raises(ValueError, match="unknown desktop state"):
        SimDesktop().set_desktop_state("asleep")  # type: ignore[arg-type]
