"""Models of what the screen operations return: screenshots, targets, observations.

Re-exported by `rigway.client.models`; see there for the conventions.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, PrivateAttr

from ._geometry import Region, image_to_native, native_to_image
from ._model_base import ApiModel
from .errors import AmbiguousTargetError, TargetNotFoundError

__all__ = [
    "DirtyRects",
    "ObserveResult",
    "ObserveText",
    "ObserveTiming",
    "Screenshot",
    "Target",
    "TargetList",
    "pick_target",
    "target_lines",
]


class Screenshot(ApiModel):
    """A JPEG of the desktop, with what is needed to map its pixels back to native.

    `width`x`height` is the JPEG's size; `native_width`x`native_height` the desktop's.
    `region` is the native rectangle the image shows (None: the whole desktop).
    `frame_id` (the `X-Frame-Id` header) names this image: an input batch may give its
    points in this image's pixels (`act(…, frame_id=shot, coords="image")`) or refuse
    to run if the screen changed near them since (`require_unchanged=True`). None from
    a gateway older than API 1.1.
    """

    jpeg: bytes = Field(repr=False)
    width: int
    height: int
    native_width: int
    native_height: int
    region: Region | None = None
    frame_id: str | None = None

    @property
    def area(self) -> Region:
        """The native rectangle the image shows (the whole desktop without a region)."""
        if self.region is not None:
            return self.region
        return Region(0, 0, self.native_width, self.native_height)

    def to_native(self, x: float, y: float) -> tuple[int, int]:
        """Map image pixel (`x`, `y`) to native desktop coordinates, for clicks."""
        return image_to_native(x, y, image_w=self.width, image_h=self.height, area=self.area)

    def from_native(self, x: float, y: float) -> tuple[int, int]:
        """Map a native desktop point to the image pixel that shows it."""
        return native_to_image(x, y, image_w=self.width, image_h=self.height, area=self.area)

    def base64(self) -> str:
        """The JPEG as base64 text, as LLM image inputs take it."""
        return base64.b64encode(self.jpeg).decode("ascii")

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the JPEG to `path` (replacing a file there) and return the path, so
        `session.screenshot().save("shot.jpg")` is the whole of keeping one."""
        target = Path(path)
        target.write_bytes(self.jpeg)
        return target


class Target(ApiModel):
    """A click target (GroundingTarget) in native pixels: a control and its box.

    `id` is stable for the same control across calls. `source` is `uia` (the platform
    accessibility tree), `cv`, `grid` or `client`. When `masked` is true, `value` is the
    literal `[redacted]`.
    """

    id: str
    x: int
    y: int
    w: int
    h: int
    role: str | None = None
    name: str | None = None
    source: str | None = None
    focused: bool = False
    masked: bool = False
    value: str | None = None

    @property
    def center(self) -> tuple[int, int]:
        """The native point at the middle of the target's box (where a click lands)."""
        return (self.x + self.w // 2, self.y + self.h // 2)

    def contains(self, x: int, y: int) -> bool:
        """True when native point (`x`, `y`) lies inside the target's box."""
        return self.x <= x < self.x + self.w and self.y <= y < self.y + self.h


def _find_target(targets: list[Target], name: str | None, role: str | None) -> Target | None:
    """First target matching `role` (case-insensitive) and `name`.

    An exact (case-insensitive) name match wins over a substring match, so
    `find_target(name="Save")` prefers "Save" to "Save as…".
    """
    wanted_role = None if role is None else role.casefold()
    wanted_name = None if name is None else name.casefold()
    partial: Target | None = None
    for target in targets:
        if wanted_role is not None and (target.role or "").casefold() != wanted_role:
            continue
        if wanted_name is None:
            return target
        target_name = (target.name or "").casefold()
        if target_name == wanted_name:
            return target
        if partial is None and wanted_name in target_name:
            partial = target
    return partial


class TargetLookups:
    """How a model with `targets` finds one: by name and role, or as `click(target=…)`
    resolves a reference."""

    if TYPE_CHECKING:  # the models declare the field; pydantic must not see it here
        targets: list[Target]

    def find_target(self, name: str | None = None, role: str | None = None) -> Target | None:
        """The first target whose name matches (exact beats substring) and role equals.

        Both comparisons ignore case; None means "any". Returns None when nothing matches.
        """
        return _find_target(self.targets, name, role)

    def require_target(self, name: str | None = None, role: str | None = None) -> Target:
        """Like `find_target`, but raises TargetNotFoundError instead of returning None,
        so `click(target=…)` can never fall back to clicking wherever the pointer is."""
        return _require_target(self.targets, name, role)

    def lookup(self, ref: str | int) -> Target | None:
        """The target `ref` names as `click(target=…)` resolves it: an id, a name
        (exact, then ignoring case, then a substring; AmbiguousTargetError when several
        match), or a 1-based index into `targets`. None when nothing matches."""
        return pick_target(ref, self.targets)


class TargetList(ApiModel, TargetLookups):
    """Answer of `GET …/targets`: targets in native pixels of a `width`x`height` desktop.

    `truncated` is true when the host's walk stopped at its budget (element cap or
    deadline): the list is partial, and a control missing from it may exist.
    """

    width: int
    height: int
    targets: list[Target] = Field(default_factory=list)
    truncated: bool = False


class DirtyRects(ApiModel):
    """Changed rectangles since the last take, `[x, y, w, h]` in native pixels.

    When `available` is false (a fallback capture) there is no change metadata and the
    caller must assume the screen changed.
    """

    width: int
    height: int
    available: bool = True
    capture_mode: str | None = None
    rects: list[tuple[int, int, int, int]] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True when something changed, or when nothing can be known."""
        return not self.available or len(self.rects) > 0


class ObserveText(ApiModel):
    """Structured text of the focused window: one readable line per target, a summary."""

    window_title: str | None = None
    window_role: str | None = None
    targets: list[str] = Field(default_factory=list)
    summary: str | None = None


class ObserveTiming(ApiModel):
    """Server-side timing of an observe call, in milliseconds.

    `host_jpeg_ms` and `host_uia_ms` are None until the host reports them; `image` says
    whether a JPEG was requested.
    """

    total_ms: float = 0
    screenshot_rtt_ms: float = 0
    dirty_rtt_ms: float = 0
    targets_rtt_ms: float = 0
    host_jpeg_ms: float | None = None
    host_uia_ms: float | None = None
    image: bool = True


class ObserveMark(ApiModel):
    """A target drawn on a marked image, numbered as its `text.targets` line."""

    index: int
    id: str
    labelled: bool = True


class ChangedImage(ApiModel):
    """With `observe(since=…)`: one part of the picture that changed, at the picture's
    scale; paste it onto the since frame's picture at `region` (native) times the scale
    (`width / native_width` of that picture)."""

    region: tuple[int, int, int, int]
    width: int
    height: int
    jpeg_base64: str = Field(repr=False)

    @property
    def jpeg(self) -> bytes:
        return base64.b64decode(self.jpeg_base64)


class TargetsDiff(ApiModel):
    """With `observe(since=…)`: the targets against those shown with that frame, by id:
    `added` and `changed` in full, `removed` as ids."""

    added: list[Target] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    changed: list[Target] = Field(default_factory=list)


class ObserveResult(ApiModel, TargetLookups):
    """Frame, change flag, text and click targets in one round trip.

    `width`x`height` is the image's size (also without an image, the size it would have);
    targets are in native pixels. `jpeg_base64` is None when observed with `image=False`.
    `truncated` is true when the host's walk stopped at its budget: `targets` is partial.
    `desktop_state` is sampled on the host with the observation (see
    `Rig.desktop_state`); None from a gateway that does not report it. `frame_id` names
    the image for input in its pixels, as `Screenshot.frame_id` does.
    """

    width: int
    height: int
    native_width: int
    native_height: int
    timestamp: int | None = None
    jpeg_base64: str | None = Field(default=None, repr=False)
    dirty: DirtyRects | None = None
    changed: bool = True
    targets: list[Target] = Field(default_factory=list)
    truncated: bool = False
    text: ObserveText | None = None
    marked: bool = False
    # With mark=1: each drawn target's `index` (the number on the image), `id`, and
    # `labelled` (false: the screen was too crowded for its label, only its box drawn).
    marks: list[ObserveMark] = Field(default_factory=list)
    timing: ObserveTiming | None = None
    desktop_state: str | None = None
    # The rig's owner used its own keyboard or mouse within their delay (sampled with
    # the observation): input answers 409 owner_active until the rig rests.
    owner_active: bool = False
    frame_id: str | None = None
    # An `app` session's window (native x, y, w, h): the image shows it; None in a
    # `desktop` session.
    app_window: tuple[int, int, int, int] | None = None
    # Only with `since`: the parts that changed (`changed_images`, empty when nothing
    # did; no `jpeg_base64` then), their native bounding box (`changed_region`), and
    # `targets_diff` in place of `targets` (then empty). None without `since`.
    changed_region: tuple[int, int, int, int] | None = None
    changed_images: list[ChangedImage] | None = None
    # Only with `since`: the native area the answer's picture covers (the since frame's:
    # a region observe's region, an app session's window, or the whole desktop).
    frame_region: tuple[int, int, int, int] | None = None
    targets_diff: TargetsDiff | None = None

    # The native region the caller asked for; the response does not echo it, so the SDK
    # records it to map image pixels back to native ones.
    _region: Region | None = PrivateAttr(default=None)

    @property
    def region(self) -> Region | None:
        """The native region this observation was cropped to: the one asked for, else
        an `app` session's window (None: whole desktop); a delta's is its since frame's
        (`frame_region`), whatever the session's window is now."""
        if self.frame_region is not None:
            x, y, w, h = self.frame_region
            whole = (x, y, w, h) == (0, 0, self.native_width, self.native_height)
            return None if whole else Region(x, y, w, h)
        if self._region is None and self.app_window is not None:
            return Region(*self.app_window)
        return self._region

    def target_lines(self) -> list[str]:
        """The targets as `[n] name (role) id=…` lines, numbered from 1 as
        `click(target=n)` counts (the gateway's `text.targets` may number otherwise)."""
        return target_lines(self.targets)

    @property
    def jpeg(self) -> bytes | None:
        """The decoded JPEG, or None when observed without an image."""
        if self.jpeg_base64 is None:
            return None
        return base64.b64decode(self.jpeg_base64)

    def screenshot(self) -> Screenshot | None:
        """The image as a `Screenshot` (with `to_native`), or None without an image."""
        jpeg = self.jpeg
        if jpeg is None:
            return None
        return Screenshot(
            jpeg=jpeg,
            width=self.width,
            height=self.height,
            native_width=self.native_width,
            native_height=self.native_height,
            region=self.region,
            frame_id=self.frame_id,
        )

    def to_native(self, x: float, y: float) -> tuple[int, int]:
        """Map a pixel of the returned image to native desktop coordinates."""
        area = self.region or Region(0, 0, self.native_width, self.native_height)
        return image_to_native(x, y, image_w=self.width, image_h=self.height, area=area)


def target_lines(targets: Sequence[Target]) -> list[str]:
    """One line per target, numbered from 1 as `click(target=n)` counts:
    `[n] name (role) id=…`, with ` [focused]` after the role of the focused one."""
    lines = []
    for number, target in enumerate(targets, start=1):
        focus = " [focused]" if target.focused else ""
        name = target.name or "(unnamed)"
        lines.append(f"[{number}] {name} ({target.role}){focus} id={target.id}")
    return lines


def _require_target(targets: list[Target], name: str | None, role: str | None) -> Target:
    found = _find_target(targets, name, role)
    if found is None:
        wanted = " ".join(part for part in (name, role) if part is not None) or "any"
        raise TargetNotFoundError(wanted)
    return found


def _name_tiers(name: str) -> tuple[Callable[[Target], bool], ...]:
    """How a name matches, most precise first: exactly, ignoring case, as a substring
    ignoring case."""
    folded = name.casefold()
    return (
        lambda target: target.name == name,
        lambda target: (target.name or "").casefold() == folded,
        lambda target: folded in (target.name or "").casefold(),
    )


def pick_target(ref: str | int, targets: Sequence[Target]) -> Target | None:
    """The target `ref` names among `targets` (a snapshot, in observe's order).

    An int is a 1-based index into `targets`. A string is an id when one matches, else
    a name: exact first, then ignoring case, then a case-insensitive substring; the
    first of those ways that matches anything decides, and two or more matches there
    raise AmbiguousTargetError with the candidates. None when nothing matches.
    """
    if isinstance(ref, int):
        return targets[ref - 1] if 1 <= ref <= len(targets) else None
    for target in targets:
        if target.id == ref:
            return target
    for matches in _name_tiers(ref):
        found = [target for target in targets if matches(target)]
        if len(found) == 1:
            return found[0]
        if found:
            raise AmbiguousTargetError(ref, found)
    return None
