"""AT-SPI role numbers (AtspiRole, a stable ABI) and the names `GetRoleName` gives them."""

from __future__ import annotations

ROLE_NAMES: tuple[str, ...] = (
    "invalid", "accelerator label", "alert", "animation", "arrow", "calendar", "canvas",
    "check box", "check menu item", "color chooser", "column header", "combo box",
    "date editor", "desktop icon", "desktop frame", "dial", "dialog", "directory pane",
    "drawing area", "file chooser", "filler", "focus traversable", "font chooser", "frame",
    "glass pane", "html container", "icon", "image", "internal frame", "label",
    "layered pane", "list", "list item", "menu", "menu bar", "menu item", "option pane",
    "page tab", "page tab list", "panel", "password text", "popup menu", "progress bar",
    "push button", "radio button", "radio menu item", "root pane", "row header",
    "scroll bar", "scroll pane", "separator", "slider", "spin button", "split pane",
    "status bar", "table", "table cell", "table column header", "table row header",
    "tearoff menu item", "terminal", "text", "toggle button", "tool bar", "tool tip",
    "tree", "tree table", "unknown", "viewport", "window", "extended", "header", "footer",
    "paragraph", "ruler", "application", "autocomplete", "editbar", "embedded", "entry",
    "chart", "caption", "document frame", "heading", "page", "section",
    "redundant object", "form", "link", "input method window", "table row", "tree item",
    "document spreadsheet", "document presentation", "document text", "document web",
    "document email", "comment", "list box", "grouping", "image map", "notification",
    "info bar", "level bar", "title bar", "block quote", "audio", "video", "definition",
    "article", "landmark", "log", "marquee", "math", "rating", "timer", "static",
    "math fraction", "math root", "subscript", "superscript", "description list",
    "description term", "description value", "footnote", "content deletion",
    "content insertion", "mark", "suggestion", "push button menu", "switch",
)  # fmt: skip

CHECK_BOX = 7
CHECK_MENU_ITEM = 8
COMBO_BOX = 11
LIST_ITEM = 32
MENU = 33
MENU_ITEM = 35
PAGE_TAB = 37
PASSWORD_TEXT = 40
PUSH_BUTTON = 43
RADIO_BUTTON = 44
RADIO_MENU_ITEM = 45
SCROLL_BAR = 48
SLIDER = 51
SPIN_BUTTON = 52
TABLE_CELL = 56
TABLE_COLUMN_HEADER = 57
TERMINAL = 60
TEXT = 61
TOGGLE_BUTTON = 62
ENTRY = 79
LINK = 88
TREE_ITEM = 91
PUSH_BUTTON_MENU = 129
SWITCH = 130

# Controls an agent can click, type into or read: the targets of a snapshot.
INTERACTIVE: frozenset[int] = frozenset({
    CHECK_BOX, CHECK_MENU_ITEM, COMBO_BOX, LIST_ITEM, MENU, MENU_ITEM, PAGE_TAB,
    PASSWORD_TEXT, PUSH_BUTTON, RADIO_BUTTON, RADIO_MENU_ITEM, SCROLL_BAR, SLIDER,
    SPIN_BUTTON, TABLE_CELL, TABLE_COLUMN_HEADER, TERMINAL, TEXT, TOGGLE_BUTTON, ENTRY,
    LINK, TREE_ITEM, PUSH_BUTTON_MENU, SWITCH,
})  # fmt: skip
# Their value is their text (never PASSWORD_TEXT: its text is never read).
TEXTUAL: frozenset[int] = frozenset({TEXT, ENTRY, SPIN_BUTTON, TERMINAL})
# Their value is their state: "checked", "unchecked" or "mixed".
TOGGLES: frozenset[int] = frozenset({
    CHECK_BOX, CHECK_MENU_ITEM, RADIO_BUTTON, RADIO_MENU_ITEM, TOGGLE_BUTTON, SWITCH,
})  # fmt: skip
# Their value is the number of the Value interface.
RANGES: frozenset[int] = frozenset({SLIDER, SCROLL_BAR})


def role_name(role: int) -> str:
    return ROLE_NAMES[role] if 0 <= role < len(ROLE_NAMES) else f"role {role}"
