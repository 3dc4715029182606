"""The sim backend: a small deterministic desktop drawn in memory, with real state."""

from rigway.agent.backends.sim.desktop import KEY_PREFIX, MAIN_WINDOW_ID, SimDesktop
from rigway.agent.backends.sim.form import LIST_ITEMS, VISIBLE_ROWS
from rigway.agent.backends.sim.widgets import DESKTOP_BGRA, WINDOW_TITLE

__all__ = [
    "DESKTOP_BGRA",
    "KEY_PREFIX",
    "LIST_ITEMS",
    "MAIN_WINDOW_ID",
    "VISIBLE_ROWS",
    "WINDOW_TITLE",
    "SimDesktop",
]
