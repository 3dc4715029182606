"""mark=1's drawing on gtk3-widget-factory through the x11 walk: the targets are
numbered in order and nearly all find a spot for their label."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from bench.render_marks import MAX_WIDTH, render

from rigway.agent.backends.base import AccessibilitySnapshot
from rigway.agent.backends.x11 import X11Desktop
from tests.support.x_desktop import LaunchedApps

pytestmark = pytest.mark.x11

FACTORY = "gtk3-widget-factory"


def test_the_widget_factory_renders_numbered_marks_at_the_model_downscale(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    apps.launch([FACTORY])
    walked = window_titled(FACTORY)
    image = render(x11_backend)
    assert image.marked
    assert max(image.width, image.height) == MAX_WIDTH
    assert len(image.marks) >= len(walked.elements) // 2
    assert [m.index for m in image.marks] == sorted(m.index for m in image.marks)
    assert sum(m.labelled for m in image.marks) >= len(image.marks) * 0.8
