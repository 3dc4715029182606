"""Key names, characters and spare-keycode bookkeeping (pure: no X server)."""

from __future__ import annotations

import pytest

from rigway.agent.backends.x11.keymap import (
    KeyboardLayout,
    KeyStroke,
    SpareKeycodes,
    is_typeable,
    keysym_for_char,
    keysym_for_key,
    split_runs,
)
from rigway.protocol.keys import CHARACTER_KEYS, NAMED_KEYS


def test_every_canonical_key_has_a_keysym() -> None:
    keysyms = {name: keysym_for_key(name) for name in NAMED_KEYS | CHARACTER_KEYS}

    assert len(set(keysyms.values())) == len(keysyms)
    assert (keysyms["enter"], keysyms["f1"], keysyms["f24"], keysyms["a"]) == (
        0xFF0D,
        0xFFBE,
        0xFFD5,
        0x61,
    )


@pytest.mark.parametrize(
    ("char", "keysym"),
    [("a", 0x61), ("é", 0xE9), ("€", 0x010020AC), ("日", 0x010065E5), ("😀", 0x0101F600)],
)
def test_characters_map_to_latin1_or_unicode_keysyms(char: str, keysym: int) -> None:
    assert keysym_for_char(char) == keysym


def test_control_characters_other_than_newline_and_tab_are_not_typeable() -> None:
    assert [is_typeable(c) for c in "\n\t\x00\x1b\x7f\x85a"] == [True, True] + [False] * 4 + [True]


def test_layout_prefers_an_unshifted_position_anywhere() -> None:
    # keycode 10: "1 !"; keycode 11: "( )" unshifted, like Xvfb's keycode 187.
    layout = KeyboardLayout(10, [[0x31, 0x21], [0x28, 0x29], [0x39, 0x28]], exclude=[])

    paren = layout.find(0x28)
    bang = layout.find(0x21)

    assert paren == KeyStroke(11, needs_shift=False)
    assert bang == KeyStroke(10, needs_shift=True)


def test_spares_evict_the_least_recently_used_binding_first() -> None:
    spares = SpareKeycodes([200, 201])
    spares.commit(spares.plan([1, 2]))
    spares.lookup(1)  # 2 is now the least recently used

    plan = spares.plan([3])

    assert plan == {201: 3}  # 1 went to 200 and 2 to 201
    spares.commit(plan)
    assert spares.lookup(2) is None
    assert spares.lookup(1) is not None


def test_pinned_keycodes_are_never_evicted() -> None:
    spares = SpareKeycodes([200, 201])
    spares.commit(spares.plan([1, 2]))
    held = spares.lookup(1)
    assert held is not None
    spares.pin(held)

    spares.commit(spares.plan([3]))

    assert spares.lookup(1) == held
    assert spares.capacity == 1
    with pytest.raises(ValueError, match="exceed"):
        spares.plan([4, 5])


def test_runs_split_before_exceeding_the_spare_capacity() -> None:
    keysyms = [1, 2, 1, 99, 3, 2, 4]

    # {1, 2} | 99 is on the layout | {3, 2} | {4}
    assert split_runs(keysyms, needs_spare={1, 2, 3, 4}, capacity=2) == [4, 6, 7]
