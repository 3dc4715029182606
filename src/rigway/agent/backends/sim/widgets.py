"""Layout, colours and painters of the sim's window, drawn straight into BGRA arrays.

Every painter draws inside its control's rectangle only, so a control's rectangle is
exactly the damage its redraw causes. Text uses Pillow's built-in bitmap font (6x11
pixels a glyph, Latin-1): it ships inside Pillow, so the pixels are the same on every
machine, unlike a FreeType font whose rasteriser version varies.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageDraw, ImageFont

from rigway.agent.backends.base import Pixels, Rect
from rigway.agent.backends.sim import form
from rigway.agent.backends.sim.form import (
    ButtonView,
    CheckBoxView,
    FieldView,
    LabelView,
    ListView,
    MaskedFieldView,
    View,
)

Colour = tuple[int, int, int, int]  # B, G, R, A

# The desktop behind the window: a dark teal, opaque. Tests check pixels against it.
DESKTOP_BGRA: Colour = (96, 80, 32, 255)
WINDOW_BGRA: Colour = (240, 240, 240, 255)
WINDOW_BORDER_BGRA: Colour = (64, 64, 64, 255)
TITLE_BAR_BGRA: Colour = (140, 80, 30, 255)
TITLE_TEXT_BGRA: Colour = (255, 255, 255, 255)
TEXT_BGRA: Colour = (0, 0, 0, 255)
FIELD_BGRA: Colour = (255, 255, 255, 255)
BORDER_BGRA: Colour = (150, 150, 150, 255)
FOCUS_BGRA: Colour = (215, 120, 0, 255)
BUTTON_BGRA: Colour = (225, 225, 225, 255)
SELECTED_BGRA: Colour = (215, 120, 0, 255)
SELECTED_TEXT_BGRA: Colour = (255, 255, 255, 255)

WINDOW_TITLE = "Rigway Sim — Sign in"
WINDOW_W = 560
WINDOW_H = 400
TITLE_BAR = Rect(0, 0, WINDOW_W, 28)

# Control rectangles, relative to the window's top-left corner.
ROW_H = 24
LIST_PAD = 2
CONTROL_RECTS: dict[str, Rect] = {
    form.USERNAME: Rect(130, 44, 400, 24),
    form.PASSWORD: Rect(130, 78, 400, 24),
    form.REMEMBER: Rect(130, 112, 140, 20),
    form.SIGN_IN: Rect(130, 142, 100, 28),
    form.CANCEL: Rect(242, 142, 100, 28),
    form.STATUS: Rect(20, 182, 520, 18),
    form.RECENT: Rect(20, 228, 520, form.VISIBLE_ROWS * ROW_H + 2 * LIST_PAD),
}
# Static captions: (x, y, text), painted once.
CAPTIONS: tuple[tuple[int, int, str], ...] = (
    (20, 51, "Username"),
    (20, 85, "Password"),
    (20, 212, "Recent"),
)

GLYPH_W = 6
GLYPH_H = 11
_FONT = ImageFont.load_default_imagefont()
# Stand-ins for characters outside the bitmap font's Latin-1 range.
_SUBSTITUTES = {
    "\u2014": "-",  # em dash, as in the window title
    "\u2013": "-",  # en dash
    "\u2022": "*",  # bullet
    "\u2019": "'",  # right single quote
    "\u201c": '"',  # left double quote
    "\u201d": '"',  # right double quote
}


def row_rect(row: int, box: Rect = CONTROL_RECTS[form.RECENT]) -> Rect:
    """Rectangle of visible row `row` (0-based) of the list drawn in `box`."""
    return Rect(box.x + LIST_PAD, box.y + LIST_PAD + row * ROW_H, box.w - 2 * LIST_PAD, ROW_H)


def fill(canvas: Pixels, rect: Rect, colour: Colour) -> None:
    canvas[rect.y : rect.y + rect.h, rect.x : rect.x + rect.w] = colour


def frame(canvas: Pixels, rect: Rect, colour: Colour, thickness: int = 1) -> None:
    x, y, w, h, t = rect.x, rect.y, rect.w, rect.h, thickness
    fill(canvas, Rect(x, y, w, t), colour)
    fill(canvas, Rect(x, y + h - t, w, t), colour)
    fill(canvas, Rect(x, y, t, h), colour)
    fill(canvas, Rect(x + w - t, y, t, h), colour)


def draw_text(
    canvas: Pixels, x: int, y: int, text: str, colour: Colour, max_w: int, keep_tail: bool = False
) -> int:
    """Draw one line clipped to `max_w` pixels (its tail when `keep_tail`); returns its width."""
    fitting = max(max_w // GLYPH_W, 0)
    if len(text) > fitting:
        text = text[len(text) - fitting :] if keep_tail else text[:fitting]
    if text == "":
        return 0
    mask = _text_mask(_drawable(text))
    height, width = mask.shape
    canvas[y : y + height, x : x + width][mask] = colour
    return int(width)


def paint_chrome(canvas: Pixels) -> None:
    """The parts of the window that never change: background, frame, title, captions."""
    fill(canvas, Rect(0, 0, WINDOW_W, WINDOW_H), WINDOW_BGRA)
    frame(canvas, Rect(0, 0, WINDOW_W, WINDOW_H), WINDOW_BORDER_BGRA)
    fill(canvas, TITLE_BAR, TITLE_BAR_BGRA)
    draw_text(canvas, 10, 9, WINDOW_TITLE, TITLE_TEXT_BGRA, WINDOW_W - 20)
    for x, y, caption in CAPTIONS:
        draw_text(canvas, x, y, caption, TEXT_BGRA, 100)


def paint_view(canvas: Pixels, rect: Rect, view: View) -> None:
    """Redraw one control from its view, touching only `rect` (window-relative)."""
    if isinstance(view, FieldView):
        _paint_field(canvas, rect, view)
    elif isinstance(view, MaskedFieldView):
        _paint_masked_field(canvas, rect, view)
    elif isinstance(view, CheckBoxView):
        _paint_check_box(canvas, rect, view)
    elif isinstance(view, ButtonView):
        _paint_button(canvas, rect, view)
    elif isinstance(view, LabelView):
        fill(canvas, rect, WINDOW_BGRA)
        draw_text(canvas, rect.x, rect.y + 4, view.text, TEXT_BGRA, rect.w)
    else:
        _paint_list(canvas, rect, view)


def _paint_field_box(canvas: Pixels, rect: Rect, focused: bool) -> None:
    fill(canvas, rect, FIELD_BGRA)
    if focused:
        frame(canvas, rect, FOCUS_BGRA, 2)
    else:
        frame(canvas, rect, BORDER_BGRA)


def _paint_caret(canvas: Pixels, rect: Rect, x: int) -> None:
    fill(canvas, Rect(min(x, rect.x + rect.w - 4), rect.y + 5, 1, rect.h - 10), TEXT_BGRA)


def _paint_field(canvas: Pixels, rect: Rect, view: FieldView) -> None:
    _paint_field_box(canvas, rect, view.focused)
    text_x = rect.x + 6
    width = draw_text(canvas, text_x, rect.y + 7, view.text, TEXT_BGRA, rect.w - 14, keep_tail=True)
    if view.focused:
        _paint_caret(canvas, rect, text_x + width + 1)


def _paint_masked_field(canvas: Pixels, rect: Rect, view: MaskedFieldView) -> None:
    """Bullets only: the view has no text to draw, just how many characters there are."""
    _paint_field_box(canvas, rect, view.focused)
    pitch = 10
    shown = min(view.length, (rect.w - 14) // pitch)
    for index in range(shown):
        fill(canvas, Rect(rect.x + 8 + index * pitch, rect.y + rect.h // 2 - 3, 6, 6), TEXT_BGRA)
    if view.focused:
        _paint_caret(canvas, rect, rect.x + 8 + shown * pitch)


def _paint_check_box(canvas: Pixels, rect: Rect, view: CheckBoxView) -> None:
    fill(canvas, rect, WINDOW_BGRA)
    box = Rect(rect.x + 2, rect.y + 3, 14, 14)
    fill(canvas, box, FIELD_BGRA)
    frame(canvas, box, BORDER_BGRA)
    if view.checked:
        fill(canvas, Rect(box.x + 3, box.y + 3, 8, 8), TEXT_BGRA)
    draw_text(canvas, rect.x + 22, rect.y + 5, view.label, TEXT_BGRA, rect.w - 24)
    if view.focused:
        frame(canvas, rect, FOCUS_BGRA)


def _paint_button(canvas: Pixels, rect: Rect, view: ButtonView) -> None:
    fill(canvas, rect, BUTTON_BGRA)
    frame(canvas, rect, FOCUS_BGRA if view.focused else BORDER_BGRA, 2 if view.focused else 1)
    text_w = len(view.label) * GLYPH_W
    draw_text(
        canvas, rect.x + (rect.w - text_w) // 2, rect.y + 9, view.label, TEXT_BGRA, rect.w - 4
    )


def _paint_list(canvas: Pixels, rect: Rect, view: ListView) -> None:
    fill(canvas, rect, FIELD_BGRA)
    frame(canvas, rect, FOCUS_BGRA if view.focused else BORDER_BGRA, 2 if view.focused else 1)
    for row, item in enumerate(view.rows):
        cell = row_rect(row, rect)
        text_colour = TEXT_BGRA
        if row == view.selected_row:
            fill(canvas, cell, SELECTED_BGRA)
            text_colour = SELECTED_TEXT_BGRA
        draw_text(canvas, cell.x + 6, cell.y + 7, item, text_colour, cell.w - 12)


def _drawable(text: str) -> str:
    return "".join(
        char if ord(char) < 0x100 and char.isprintable() else _SUBSTITUTES.get(char, "?")
        for char in text
    )


@lru_cache(maxsize=1024)
def _text_mask(text: str) -> npt.NDArray[np.bool_]:
    image = Image.new("L", (GLYPH_W * len(text), GLYPH_H), 0)
    ImageDraw.Draw(image).text((0, 0), text, fill=255, font=_FONT)
    mask = np.asarray(image) >= 128
    mask.setflags(write=False)
    return mask
