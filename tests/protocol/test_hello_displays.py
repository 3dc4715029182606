"""`hello.displays` on the wire and the gateway's public display shape."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from rigway.gateway.rigs.schemas import DisplayOut, displays_out
from rigway.protocol.messages import MAX_DISPLAYS, DisplayInfo, Hello

BASE: dict[str, Any] = {"protocol": 1, "agent_version": "1", "native_width": 8, "native_height": 8}
ONE: dict[str, Any] = {
    "x": -1920,
    "y": 0,
    "width": 1920,
    "height": 1080,
    "scale": 1.5,
    "primary": False,
}


def test_hello_without_displays_has_none() -> None:
    assert Hello.model_validate(BASE).displays == []


def test_hello_keeps_negative_origins_and_scale() -> None:
    hello = Hello.model_validate({**BASE, "displays": [ONE]})

    assert hello.displays[0].model_dump() == ONE


def test_hello_with_too_many_displays_is_refused() -> None:
    with pytest.raises(ValidationError):
        Hello.model_validate({**BASE, "displays": [ONE] * (MAX_DISPLAYS + 1)})


@pytest.mark.parametrize("bad", [{"width": 0}, {"scale": 0}, {"scale": float("nan")}])
def test_display_out_of_bounds_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        DisplayInfo.model_validate({**ONE, **bad})


def test_public_shape_has_the_contracts_fields() -> None:
    (shown,) = displays_out([DisplayInfo.model_validate(ONE)])

    assert shown == DisplayOut.model_validate(ONE)
    assert set(shown.model_dump()) == {"x", "y", "width", "height", "scale", "primary"}
