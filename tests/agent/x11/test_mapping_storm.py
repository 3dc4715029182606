"""Typing rebinds keycodes in batches, so the desktop's pointer never freezes.

Every ChangeKeyboardMapping is broadcast to all X clients as a MappingNotify, and
openbox re-grabs its keys for each one; one remap per character once kept it busy for
half a minute with the pointer frozen behind its click-to-focus grab. A listening
client counts the notifications: at most one per run of text `split_runs` plans, none
for characters still bound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from Xlib import X

from rigway.agent.backends.base import AccessibilitySnapshot
from rigway.agent.backends.x11 import X11Desktop
from rigway.agent.backends.x11.input import SPARE_PROPERTY
from rigway.agent.backends.x11.keymap import keysym_for_char, split_runs
from tests.support.x_desktop import LaunchedApps, XDesktop, wait_until

pytestmark = pytest.mark.x11

# 80 distinct CJK characters (none on the layout), each twice in a row: four times the
# 19 spare keycodes of Xvfb, so bindings are evicted and rebound.
DISTINCT = [chr(0x4E00 + 11 * i) for i in range(80)]
STORM = "".join(c * 2 for c in DISTINCT)
AWAY = (40, 40)


def _keyboard_notifications(conn: Any) -> int:
    """Keyboard MappingNotify events received so far (the queue is drained).

    The sync is a barrier: the server answers it only after sending this connection
    every event caused by requests it processed earlier, such as the typist's remaps
    (`type_text` returns after its own round trip).
    """
    conn.sync()
    count = 0
    for _ in range(conn.pending_events()):
        event = conn.next_event()
        if event.type == X.MappingNotify and event.request == X.MappingKeyboard:
            count += 1
    return count


def _warm_up(backend: X11Desktop) -> None:
    """Start the input role and make XTest's keyboard the one last used.

    The server also sends a MappingNotify when the core keyboard's source device
    changes (a real keyboard, then XTest): one per switch, not caused by typing.
    """
    backend.set_key("shift", down=True)
    backend.set_key("shift", down=False)


def _spare_count(conn: Any) -> int:
    prop = conn.screen().root.get_full_property(conn.intern_atom(SPARE_PROPERTY), X.AnyPropertyType)
    return 0 if prop is None else len(prop.value)


def _pointer_at(desk: XDesktop) -> tuple[int, int]:
    with desk.x_connection() as conn:
        reply = conn.screen().root.query_pointer()
    return int(reply.root_x), int(reply.root_y)


def test_typing_many_distinct_characters_remaps_once_per_run_and_the_pointer_stays_free(
    x11_backend: X11Desktop,
    x_desktop: XDesktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    apps.launch(["zenity", "--entry", "--title=Storm", "--text=Type"])
    entry = next(e for e in window_titled("Storm").elements if e.focused)
    _warm_up(x11_backend)
    with x_desktop.x_connection() as listener:
        _keyboard_notifications(listener)  # what came before is not ours to count

        x11_backend.type_text(STORM)

        notifications = _keyboard_notifications(listener)
        spares = _spare_count(listener)
    keysyms = [keysym_for_char(c) for c in STORM]
    promised = len(split_runs(keysyms, set(keysyms), spares))
    assert len(DISTINCT) > spares > 0
    assert 1 <= notifications <= promised
    assert promised < len(DISTINCT)  # the bound is not "one per character" in disguise

    # Right after: a click on a managed window (openbox's click-to-focus grab) and a
    # move elsewhere both go through, and nothing stays held.
    x11_backend.move_pointer(entry.x + entry.w // 2, entry.y + entry.h // 2)
    x11_backend.set_button("left", down=True)
    x11_backend.set_button("left", down=False)
    x11_backend.move_pointer(*AWAY)

    assert wait_until(lambda: _pointer_at(x_desktop) == AWAY, message="the pointer") is True
    assert x_desktop.held_buttons() == []


def test_characters_still_bound_are_typed_without_any_remap(
    x11_backend: X11Desktop, x_desktop: XDesktop
) -> None:
    _warm_up(x11_backend)
    with x_desktop.x_connection() as listener:
        # Fewer distinct characters than spare keycodes: all of them stay bound.
        few = "".join(DISTINCT[:5])
        x11_backend.type_text(few)
        _keyboard_notifications(listener)

        x11_backend.type_text(few * 20)

        assert _keyboard_notifications(listener) == 0
