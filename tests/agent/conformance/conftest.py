"""The conformance suite's backends: every test here runs once per backend.

x11 runs on an Xvfb desktop of its own (skipped only where X11 cannot run, with the
reason); the windows backend runs over fakes of its thin platform layer.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.agent.conformance.rigs import ConformanceRig, SimRig, X11Rig
from tests.agent.conformance.windows_rig import WindowsFakeRig
from tests.support.x_desktop import XDesktop, desktop_or_skip


@pytest.fixture(scope="session")
def conformance_x_desktop() -> Iterator[XDesktop]:
    with desktop_or_skip(width=1280, height=800) as desk:
        yield desk


@pytest.fixture(params=["sim", pytest.param("x11", marks=pytest.mark.x11), "windows"])
def rig(request: pytest.FixtureRequest) -> Iterator[ConformanceRig]:
    if request.param == "sim":
        sim = SimRig()
        yield sim
        sim.close()
    elif request.param == "x11":
        desk: XDesktop = request.getfixturevalue("conformance_x_desktop")
        backend = desk.open_backend()
        x11 = X11Rig(desk, backend)
        try:
            yield x11
        finally:
            x11.close()
            backend.close()
    else:
        windows = WindowsFakeRig()
        yield windows
        windows.close()
