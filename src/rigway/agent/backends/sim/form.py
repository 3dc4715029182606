"""The sim's sign-in form as pure state, and the views it is drawn from.

Rendering is a function of the views alone (`widgets.paint_view`), so comparing a
control's view before and after an input tells exactly whether its pixels changed:
that comparison is what makes the sim's damage exact. The password's view carries only
the length, so no painter can ever draw its text.
"""

from __future__ import annotations

from dataclasses import dataclass

# Tab order; also the keys of the interactive controls.
USERNAME = "username"
PASSWORD = "password"  # noqa: S105 (a control key, not a secret)
REMEMBER = "remember"
SIGN_IN = "sign_in"
CANCEL = "cancel"
RECENT = "recent"
STATUS = "status"
CONTROL_KEYS: tuple[str, ...] = (USERNAME, PASSWORD, REMEMBER, SIGN_IN, CANCEL, RECENT)
TEXT_FIELDS: frozenset[str] = frozenset({USERNAME, PASSWORD})

LIST_ITEMS: tuple[str, ...] = tuple(f"Recent document {n:02d}" for n in range(1, 31))
VISIBLE_ROWS = 6
ROWS_PER_NOTCH = 3
# A bound on field text keeps a runaway type_text from growing state without limit.
MAX_FIELD_CHARS = 256


@dataclass(frozen=True, slots=True)
class FieldView:
    text: str
    focused: bool


@dataclass(frozen=True, slots=True)
class MaskedFieldView:
    length: int
    focused: bool


@dataclass(frozen=True, slots=True)
class CheckBoxView:
    label: str
    checked: bool
    focused: bool


@dataclass(frozen=True, slots=True)
class ButtonView:
    label: str
    focused: bool


@dataclass(frozen=True, slots=True)
class LabelView:
    text: str


@dataclass(frozen=True, slots=True)
class ListView:
    rows: tuple[str, ...]
    selected_row: int | None
    focused: bool


View = FieldView | MaskedFieldView | CheckBoxView | ButtonView | LabelView | ListView


class SignInForm:
    """Field texts, checkbox, list position and focus; no pixels, no locking."""

    def __init__(self) -> None:
        self.fields: dict[str, str] = {USERNAME: "", PASSWORD: ""}
        self.remember = False
        self.top = 0
        self.selected: int | None = None
        # A dialog opens with its first field focused, so typing works at once.
        self.focus: str | None = USERNAME
        self.status = ""

    def focus_on(self, key: str) -> None:
        self.focus = key

    def activate(self, key: str) -> None:
        """What a completed click (or space/enter) on a control does."""
        if key == REMEMBER:
            self.remember = not self.remember
        elif key == SIGN_IN:
            user = self.fields[USERNAME]
            self.status = "Enter a username" if user == "" else f"Signed in as {user}"
        elif key == CANCEL:
            self.fields = {USERNAME: "", PASSWORD: ""}
            self.status = ""
            self.focus = USERNAME

    def select_index(self, index: int) -> None:
        if 0 <= index < len(LIST_ITEMS):
            self.selected = index

    def insert(self, text: str) -> None:
        if self.focus not in TEXT_FIELDS:
            return
        current = self.fields[self.focus]
        self.fields[self.focus] = (current + text)[:MAX_FIELD_CHARS]

    def press(self, key: str, shift: bool) -> None:
        """One named (non-character) key pressed while this form has focus."""
        if key == "tab":
            self._move_focus(-1 if shift else 1)
        elif key == "enter":
            # Sign in is the default button; enter on Cancel presses Cancel.
            self.activate(CANCEL if self.focus == CANCEL else SIGN_IN)
        elif key == "escape":
            self.activate(CANCEL)
        elif key == "space":
            self._press_space()
        elif key == "backspace" and self.focus in TEXT_FIELDS:
            self.fields[self.focus] = self.fields[self.focus][:-1]
        elif self.focus == RECENT:
            self._list_key(key)

    def scroll(self, notches_down: int) -> None:
        last_top = len(LIST_ITEMS) - VISIBLE_ROWS
        self.top = min(max(self.top + notches_down * ROWS_PER_NOTCH, 0), last_top)

    def views(self) -> dict[str, View]:
        def has_focus(key: str) -> bool:
            return self.focus == key

        selected_row = None if self.selected is None else self.selected - self.top
        if selected_row is not None and not 0 <= selected_row < VISIBLE_ROWS:
            selected_row = None
        return {
            USERNAME: FieldView(self.fields[USERNAME], has_focus(USERNAME)),
            PASSWORD: MaskedFieldView(len(self.fields[PASSWORD]), has_focus(PASSWORD)),
            REMEMBER: CheckBoxView("Remember me", self.remember, has_focus(REMEMBER)),
            SIGN_IN: ButtonView("Sign in", has_focus(SIGN_IN)),
            CANCEL: ButtonView("Cancel", has_focus(CANCEL)),
            RECENT: ListView(self.visible_items(), selected_row, has_focus(RECENT)),
            STATUS: LabelView(self.status),
        }

    def visible_items(self) -> tuple[str, ...]:
        return LIST_ITEMS[self.top : self.top + VISIBLE_ROWS]

    def _move_focus(self, step: int) -> None:
        if self.focus is None:
            self.focus = CONTROL_KEYS[0 if step > 0 else -1]
            return
        index = CONTROL_KEYS.index(self.focus)
        self.focus = CONTROL_KEYS[(index + step) % len(CONTROL_KEYS)]

    def _press_space(self) -> None:
        if self.focus in TEXT_FIELDS:
            self.insert(" ")
        elif self.focus in (REMEMBER, SIGN_IN, CANCEL):
            self.activate(self.focus)

    def _list_key(self, key: str) -> None:
        last = len(LIST_ITEMS) - 1
        current = self.selected
        moves = {"up": -1, "down": 1, "pageup": -VISIBLE_ROWS, "pagedown": VISIBLE_ROWS}
        if key in moves:
            # With nothing selected yet, the first move selects the top visible row.
            target = self.top if current is None else current + moves[key]
        elif key in ("home", "end"):
            target = 0 if key == "home" else last
        else:
            return
        self.selected = min(max(target, 0), last)
        # Keep the selection in view, as a real list does.
        if self.selected < self.top:
            self.top = self.selected
        elif self.selected >= self.top + VISIBLE_ROWS:
            self.top = self.selected - VISIBLE_ROWS + 1
