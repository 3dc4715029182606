"""Spare keycodes: remembered on the root window, unbound at close and cleaned at start.

Each test runs its own desktop: a second backend typing on the shared desktop would
unbind the spare keycodes the session's backend has cached.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from Xlib import X

from rigway.agent.backends.x11.input import SPARE_PROPERTY
from tests.support.x_desktop import XDesktop

pytestmark = pytest.mark.x11

NIHON = 0x01000000 | ord("日")
CRASHING_TYPIST = """
import os, sys
from rigway.agent.backends.x11 import open_x11_desktop
open_x11_desktop(sys.argv[1]).type_text("日")
os._exit(0)
"""


@pytest.fixture
def own_desktop(x_desktop: XDesktop) -> Iterator[XDesktop]:
    # Depends on x_desktop only to share its skip; this desktop is separate.
    with XDesktop() as desk:
        yield desk


def _spares_and_bindings(desk: XDesktop) -> tuple[list[int], dict[int, list[int]]]:
    with desk.x_connection() as conn:
        prop: Any = conn.screen().root.get_full_property(
            conn.intern_atom(SPARE_PROPERTY), X.AnyPropertyType
        )
        spares = [int(code) for code in prop.value]
        first = conn.display.info.min_keycode
        rows = conn.get_keyboard_mapping(first, conn.display.info.max_keycode - first + 1)
    return spares, {code: [s for s in rows[code - first] if s] for code in spares}


def test_close_unbinds_every_spare_keycode(own_desktop: XDesktop) -> None:
    backend = own_desktop.open_backend()
    backend.type_text("日本")  # nothing focused: the keys go nowhere, the bindings stay
    _, bound = _spares_and_bindings(own_desktop)
    assert any(NIHON in syms for syms in bound.values())

    backend.close()

    spares, bound = _spares_and_bindings(own_desktop)
    assert len(spares) > 0
    assert all(syms == [] for syms in bound.values())


def test_bindings_left_by_a_crashed_instance_are_cleaned_at_start(own_desktop: XDesktop) -> None:
    # A process that binds 日 and dies without close(): the binding stays on the server.
    subprocess.run([sys.executable, "-c", CRASHING_TYPIST, own_desktop.display], check=True)
    _, bound = _spares_and_bindings(own_desktop)
    assert any(NIHON in syms for syms in bound.values())

    survivor = own_desktop.open_backend()
    try:
        survivor.type_text("x")  # the input role starts (lazily) and cleans up

        _, bound = _spares_and_bindings(own_desktop)
        assert all(syms == [] for syms in bound.values())
    finally:
        survivor.close()
