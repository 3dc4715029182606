"""An observing tool's structured answer says when the rig's owner is using it (input
then waits), as the observation the gateway sent says."""

from __future__ import annotations

import pytest

from rigway.client import ObserveResult
from rigway.mcp._structured import observation_of


@pytest.mark.parametrize("active", [True, False])
def test_owner_active_reaches_the_structured_answer(active: bool) -> None:
    result = ObserveResult.model_validate(
        {"width": 8, "height": 8, "native_width": 8, "native_height": 8, "owner_active": active}
    )
    assert observation_of(result).owner_active is active


def test_a_gateway_that_does_not_say_reads_not_active() -> None:
    result = ObserveResult.model_validate(
        {"width": 8, "height": 8, "native_width": 8, "native_height": 8}
    )
    assert observation_of(result).owner_active is False
