"""Reduce motion on Windows: the UI effects that animate, off while a session is live.

Windows keeps its animation switches per user, read and written through
SystemParametersInfoW: each effect has a GET action that fills a BOOL and a SET action
that takes the new value as its pvParam. Turning motion down reads every effect first,
switches off those that are on, and remembers which; restoring switches exactly those
back on, so an effect the owner had off stays off and one the owner turns on meanwhile
is left as they chose. The writes pass SPIF_SENDCHANGE without SPIF_UPDATEINIFILE: the
change lasts for this sign-in only and never reaches the user's profile, so even an
agent killed before its restore leaves the owner's settings as they were at the next
sign-in.

Pure: the effects, the bookkeeping and the constants (checked against the mingw-w64
headers, `abi.py`) are here; `_ui_effects.py` is the binding.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from rigway.agent.backends.windows.abi import AbiDeclarations

__all__ = ["ABI", "CONSTANTS", "EFFECTS", "UiEffect", "UiEffectsPort", "WindowsUiEffects"]

_log = logging.getLogger(__name__)

CONSTANTS: Final[Mapping[str, int]] = {
    # "Animate controls and elements inside windows": the transitions apps draw.
    "SPI_GETCLIENTAREAANIMATION": 0x1042,
    "SPI_SETCLIENTAREAANIMATION": 0x1043,
    "SPI_GETMENUANIMATION": 0x1002,
    "SPI_SETMENUANIMATION": 0x1003,
    "SPI_GETCOMBOBOXANIMATION": 0x1004,
    "SPI_SETCOMBOBOXANIMATION": 0x1005,
    "SPI_GETLISTBOXSMOOTHSCROLLING": 0x1006,
    "SPI_SETLISTBOXSMOOTHSCROLLING": 0x1007,
    "SPI_GETSELECTIONFADE": 0x1014,
    "SPI_SETSELECTIONFADE": 0x1015,
    "SPI_GETTOOLTIPANIMATION": 0x1016,
    "SPI_SETTOOLTIPANIMATION": 0x1017,
    "SPIF_SENDCHANGE": 0x0002,
}

ABI = AbiDeclarations(constants=CONSTANTS, headers=("windows.h",))


@dataclass(frozen=True, slots=True)
class UiEffect:
    name: str
    get_action: int
    set_action: int


def _effect(name: str) -> UiEffect:
    return UiEffect(name, CONSTANTS[f"SPI_GET{name}"], CONSTANTS[f"SPI_SET{name}"])


EFFECTS: Final[tuple[UiEffect, ...]] = tuple(
    _effect(name)
    for name in (
        "CLIENTAREAANIMATION",
        "MENUANIMATION",
        "COMBOBOXANIMATION",
        "LISTBOXSMOOTHSCROLLING",
        "SELECTIONFADE",
        "TOOLTIPANIMATION",
    )
)


class UiEffectsPort(Protocol):
    """SystemParametersInfoW for BOOL effects; each call raises OSError when it fails."""

    def get_flag(self, action: int) -> bool: ...

    def set_flag(self, action: int, on: bool) -> None: ...


class WindowsUiEffects:
    """`set_reduce_motion` for the windows backend; any thread (one lock)."""

    def __init__(self, port: UiEffectsPort, effects: tuple[UiEffect, ...] = EFFECTS) -> None:
        self._port = port
        self._effects = effects
        self._lock = threading.Lock()
        # The effects this turned off, to turn back on; None while motion is not reduced.
        self._turned_off: list[UiEffect] | None = None

    @property
    def turned_off(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(e.name for e in self._turned_off or ())

    def set_reduce_motion(self, on: bool) -> None:
        with self._lock:
            if on and self._turned_off is None:
                self._turned_off = []
                self._turn_off(self._turned_off)
            elif not on and self._turned_off is not None:
                turned_off, self._turned_off = self._turned_off, None
                self._turn_back_on(turned_off)

    def close(self) -> None:
        self.set_reduce_motion(False)

    def _turn_off(self, turned_off: list[UiEffect]) -> None:
        for effect in self._effects:
            try:
                if not self._port.get_flag(effect.get_action):
                    continue  # the owner has it off: not ours to restore
            except OSError as exc:
                _log.warning("reduce motion: cannot read %s, left alone: %s", effect.name, exc)
                continue
            # Listed before the write: a write that fails half-way is restored too.
            turned_off.append(effect)
            try:
                self._port.set_flag(effect.set_action, False)
            except OSError as exc:
                _log.warning("reduce motion: cannot turn %s off: %s", effect.name, exc)

    def _turn_back_on(self, turned_off: list[UiEffect]) -> None:
        """Every one is tried; the first failure is raised after the rest."""
        failures: list[OSError] = []
        for effect in turned_off:
            try:
                self._port.set_flag(effect.set_action, True)
            except OSError as exc:
                _log.warning("reduce motion: cannot turn %s back on: %s", effect.name, exc)
                failures.append(exc)
        if failures:
            raise failures[0]
