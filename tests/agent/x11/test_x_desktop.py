"""The test desktop itself leaves nothing behind, D-Bus-activated daemons included."""

from __future__ import annotations

import pytest

from rigway.agent.backends.base import WalkBudget
from tests.support.x_desktop import XDesktop, wait_until

pytestmark = pytest.mark.x11


def test_teardown_kills_every_tagged_process(x_desktop: XDesktop) -> None:
    with XDesktop() as desk:
        desk.launch(["zenity", "--info", "--title=Activate AT-SPI", "--text=hi"])
        backend = desk.open_backend()
        try:
            wait_until(
                lambda: backend.snapshot_accessibility(WalkBudget()).elements != [],
                message="the a11y bus to be activated",
            )
        finally:
            backend.close()
        names = {p.name() for p in desk.tagged_processes()}
        assert {"Xvfb", "dbus-daemon", "openbox", "zenity", "at-spi-bus-launcher"} <= names

    assert desk.tagged_processes() == []
