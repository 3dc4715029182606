"""Reduce motion on Windows (`ui_effects.py`) over a fake SystemParametersInfoW."""

from __future__ import annotations

import pytest

from rigway.agent.backends.windows.ui_effects import CONSTANTS, EFFECTS, WindowsUiEffects

CLIENT_AREA = CONSTANTS["SPI_GETCLIENTAREAANIMATION"]
MENU = CONSTANTS["SPI_GETMENUANIMATION"]


class FakeSystemParameters:
    """The user's effect switches, by GET action; SET actions write the same switch."""

    def __init__(self, off: frozenset[int] = frozenset()) -> None:
        self.flags = {e.get_action: e.get_action not in off for e in EFFECTS}
        self.writes: list[tuple[str, bool]] = []
        self.unreadable: set[int] = set()
        self.unwritable: set[int] = set()

    def get_flag(self, action: int) -> bool:
        if action in self.unreadable:
            raise OSError(5, "Access is denied")
        return self.flags[action]

    def set_flag(self, action: int, on: bool) -> None:
        effect = next(e for e in EFFECTS if e.set_action == action)
        self.writes.append((effect.name, on))
        if effect.get_action in self.unwritable:
            raise OSError(5, "Access is denied")
        self.flags[effect.get_action] = on


def test_every_effect_has_a_get_and_the_set_after_it() -> None:
    for effect in EFFECTS:
        assert effect.set_action == effect.get_action + 1


def test_on_turns_every_effect_off_and_off_turns_them_back_on() -> None:
    system = FakeSystemParameters()
    effects = WindowsUiEffects(system)

    effects.set_reduce_motion(True)
    assert not any(system.flags.values())

    effects.set_reduce_motion(False)
    assert all(system.flags.values())


def test_an_effect_the_owner_had_off_stays_off() -> None:
    system = FakeSystemParameters(off=frozenset({MENU}))
    effects = WindowsUiEffects(system)

    effects.set_reduce_motion(True)
    effects.set_reduce_motion(False)

    assert not system.flags[MENU]
    assert system.flags[CLIENT_AREA]
    assert ("MENUANIMATION", True) not in system.writes


def test_both_ways_are_idempotent() -> None:
    system = FakeSystemParameters()
    effects = WindowsUiEffects(system)

    effects.set_reduce_motion(False)  # nothing to restore yet
    effects.set_reduce_motion(True)
    effects.set_reduce_motion(True)
    effects.set_reduce_motion(False)
    effects.set_reduce_motion(False)

    assert len(system.writes) == 2 * len(EFFECTS)


def test_an_unreadable_effect_is_left_alone() -> None:
    system = FakeSystemParameters()
    system.unreadable.add(CLIENT_AREA)
    effects = WindowsUiEffects(system)

    effects.set_reduce_motion(True)

    assert system.flags[CLIENT_AREA]
    assert "CLIENTAREAANIMATION" not in effects.turned_off


def test_a_failed_restore_still_tries_the_rest_then_raises() -> None:
    system = FakeSystemParameters()
    effects = WindowsUiEffects(system)
    effects.set_reduce_motion(True)
    system.unwritable.add(CLIENT_AREA)

    with pytest.raises(OSError, match="Access is denied"):
        effects.set_reduce_motion(False)

    assert not system.flags[CLIENT_AREA]
    assert all(flag for action, flag in system.flags.items() if action != CLIENT_AREA)


def test_close_restores() -> None:
    system = FakeSystemParameters()
    effects = WindowsUiEffects(system)
    effects.set_reduce_motion(True)

    effects.close()

    assert all(system.flags.values())
