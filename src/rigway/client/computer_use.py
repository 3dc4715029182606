"""Adapters from LLM computer-use tool actions to Rigway input batches.

Two action dialects are understood:

- **Anthropic** (`computer_20250124` / `computer_20251124` tools): `{"action":
  "left_click", "coordinate": [x, y]}`, `type`, `key` (xdotool names, `"ctrl+s"`,
  `"Return"`), `mouse_move`, `double_click`, `triple_click`, `right_click`,
  `middle_click`, `scroll` (`scroll_direction`, `scroll_amount` in wheel clicks),
  `left_click_drag` (`start_coordinate` → `coordinate`), `left_mouse_down`,
  `left_mouse_up`, `hold_key`, `wait`, `screenshot`, `cursor_position`, `zoom`.
- **OpenAI** (`computer_use_preview` tool): `{"type": "click", "x": …, "y": …,
  "button": "left"}`, `double_click`, `scroll` (`scroll_x`/`scroll_y` in pixels),
  `type`, `keypress` (`keys: ["CTRL", "S"]`), `move`, `drag` (`path` of `{x, y}`),
  `screenshot`, `wait`.

The planners (`plan_anthropic_action`, `plan_openai_action`) are pure: an action and
a `ScreenGeometry` in, an `ActionPlan` (events in native pixels, a wait, what to send
back) out. `ComputerUseRunner` / `AsyncComputerUseRunner` execute a plan on a session:
its events in one batch that lets the screen settle before the screenshot is taken
(`settle=False` to answer at once).

Drags are `mouse_down`, moves, `mouse_up` in one batch. `left_mouse_down` leaves the
button held across actions (the model moves the pointer in between) until
`left_mouse_up`, or until the session ends. A `wait` runs on the rig (`HostWait`): up to
its duration for the screen to change, then for it to go still; a screen on which
nothing happens takes the whole duration, as a sleep would.

Screenshot scaling (see `ScreenGeometry`): for Anthropic, the largest size within
1568 px on the long edge and 1.15 megapixels, the limits under which Claude sees an
image without resizing it (https://docs.anthropic.com/en/docs/build-with-claude/vision,
"Evaluate image size"); sending exactly that size keeps the model's coordinates in the
image we sent, so they map back exactly. Models with a larger limit (2576 px for
Claude Opus 4.7) can be given more with `ScreenGeometry.for_anthropic(max_long_edge=…,
max_pixels=…)`. For OpenAI, the display size declared to the model in the tool
definition (`display_width`/`display_height`); declare one with the desktop's aspect.

Other conversions: OpenAI scroll pixels become wheel notches (SCROLL_PIXELS_PER_NOTCH,
at least one); OpenAI's back/forward side buttons become alt+left / alt+right; xdotool
keysyms (`Return`, `Page_Down`, `KP_Enter`, `super`) and OpenAI names (`ARROWLEFT`,
`CMD`, `ESC`) become Rigway key names. `cursor_position` is answered from where the
runner's own events left the pointer (the API cannot read it back).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._act_ops import SettleLike
from ._async_session import AsyncSessionHandle
from ._computer_keys import anthropic_key, openai_keys
from ._computer_plans import (
    ANTHROPIC_MAX_LONG_EDGE_PX,
    ANTHROPIC_MAX_PIXELS,
    SCROLL_PIXELS_PER_NOTCH,
    ActionPlan,
    Dialect,
    HostWait,
    ScreenGeometry,
    plan_action,
    plan_anthropic_action,
    plan_openai_action,
)
from ._geometry import Region
from ._operations import MAX_EVENTS_PER_BATCH
from ._session import SessionHandle
from .errors import UnsupportedActionError
from .models import InputEvent, Screenshot, Settle

__all__ = [
    "ANTHROPIC_MAX_LONG_EDGE_PX",
    "ANTHROPIC_MAX_PIXELS",
    "ANTHROPIC_TOOL_TYPE",
    "OPENAI_TOOL_TYPE",
    "SCROLL_PIXELS_PER_NOTCH",
    "ActionPlan",
    "ActionResult",
    "AsyncComputerUseRunner",
    "ComputerUseRunner",
    "Dialect",
    "HostWait",
    "ScreenGeometry",
    "anthropic_key",
    "anthropic_tool_param",
    "openai_keys",
    "openai_tool_param",
    "plan_action",
    "plan_anthropic_action",
    "plan_openai_action",
]

ANTHROPIC_TOOL_TYPE = "computer_20250124"
OPENAI_TOOL_TYPE = "computer_use_preview"


def anthropic_tool_param(
    geometry: ScreenGeometry, *, tool_type: str = ANTHROPIC_TOOL_TYPE
) -> dict[str, Any]:
    """The `tools` entry declaring this geometry's image size to Claude."""
    return {
        "type": tool_type,
        "name": "computer",
        "display_width_px": geometry.image_w,
        "display_height_px": geometry.image_h,
    }


def openai_tool_param(geometry: ScreenGeometry, *, environment: str = "windows") -> dict[str, Any]:
    """The `tools` entry declaring this geometry's display size to an OpenAI model."""
    return {
        "type": OPENAI_TOOL_TYPE,
        "display_width": geometry.image_w,
        "display_height": geometry.image_h,
        "environment": environment,
    }


# ----------------------------------------------------------------------- runners


@dataclass(frozen=True)
class ActionResult:
    """What to send back to the model after an action.

    `screenshot` is sized to the geometry's image (or is the zoomed region); `text`
    carries the pointer position for `cursor_position`, as `X=…,Y=…` in image pixels.
    """

    plan: ActionPlan
    screenshot: Screenshot | None = None
    text: str | None = None

    def anthropic_content(self) -> list[dict[str, Any]]:
        """Content blocks for an Anthropic `tool_result`."""
        blocks: list[dict[str, Any]] = []
        if self.text is not None:
            blocks.append({"type": "text", "text": self.text})
        if self.screenshot is not None:
            source = {"type": "base64", "media_type": "image/jpeg"}
            blocks.append({"type": "image", "source": {**source, "data": self.screenshot.base64()}})
        return blocks

    def openai_output(self) -> dict[str, Any]:
        """The `output` of an OpenAI `computer_call_output` (a screenshot is required)."""
        if self.screenshot is None:
            raise ValueError("this action produced no screenshot")
        url = f"data:image/jpeg;base64,{self.screenshot.base64()}"
        return {"type": "computer_screenshot", "image_url": url}


def _batches(events: tuple[InputEvent, ...]) -> list[list[InputEvent]]:
    return [
        list(events[i : i + MAX_EVENTS_PER_BATCH])
        for i in range(0, len(events), MAX_EVENTS_PER_BATCH)
    ]


class _RunnerState:
    """Geometry, dialect, settle and the pointer position shared by both runners."""

    def __init__(
        self, geometry: ScreenGeometry, dialect: Dialect, quality: int | None, settle: SettleLike
    ) -> None:
        self.geometry = geometry
        self.dialect = dialect
        self.quality = quality
        self.settle = settle
        # Rigway cannot read the pointer back, so the runner remembers where its own
        # events left it (None until an action moved it).
        self.pointer: tuple[int, int] | None = None

    def plan(self, action: Mapping[str, Any]) -> ActionPlan:
        plan = plan_action(action, self.geometry, self.dialect)
        if plan.wants_cursor and self.pointer is None:
            raise UnsupportedActionError(
                "cursor_position: unknown until an action has moved the pointer"
            )
        return plan

    def batches(self, plan: ActionPlan) -> list[tuple[list[InputEvent], SettleLike]]:
        """The plan's events in batches, the last one settling (when asked to)."""
        batches = _batches(plan.events)
        last = len(batches) - 1
        return [(batch, self.settle if i == last else None) for i, batch in enumerate(batches)]

    def after(self, plan: ActionPlan) -> str | None:
        if plan.pointer is not None:
            self.pointer = plan.pointer
        if not plan.wants_cursor or self.pointer is None:
            return None
        x, y = self.geometry.to_image(*self.pointer)
        return f"X={x},Y={y}"


class ComputerUseRunner:
    """Runs model actions on a `SessionHandle` and returns what the model should see.

    `runner.run(action)` plans the action, sends its events in one batch that settles
    (`settle`: True for the gateway's defaults, a `Settle`, or False), runs the model's
    wait on the rig, and returns an `ActionResult` with a screenshot at the geometry's
    image size.
    """

    def __init__(
        self,
        session: SessionHandle,
        geometry: ScreenGeometry,
        *,
        dialect: Dialect,
        quality: int | None = None,
        settle: Settle | bool = True,
    ) -> None:
        self.session = session
        self._state = _RunnerState(geometry, dialect, quality, settle)

    @property
    def geometry(self) -> ScreenGeometry:
        """The geometry declared to the model."""
        return self._state.geometry

    def screenshot(self, region: Region | None = None) -> Screenshot:
        """A screenshot at the image size the model works in (or of a native region)."""
        return self.session.screenshot(
            max_width=self.geometry.long_edge, quality=self._state.quality, region=region
        )

    def run(self, action: Mapping[str, Any]) -> ActionResult:
        """Execute one action; UnsupportedActionError is meant for the model to read."""
        plan = self._state.plan(action)
        for batch, settle in self._state.batches(plan):
            self.session.act(batch, settle=settle)
        wait = HostWait(plan.wait_s)
        while (step := wait.next()) is not None:
            until, timeout_ms, quiet_ms = step
            wait.record(self.session.wait_for(until, timeout_ms=timeout_ms, quiet_ms=quiet_ms))
        text = self._state.after(plan)
        shot = None
        if plan.zoom is not None or plan.wants_screenshot:
            shot = self.screenshot(plan.zoom)
        return ActionResult(plan=plan, screenshot=shot, text=text)


class AsyncComputerUseRunner:
    """`ComputerUseRunner` for an `AsyncSessionHandle`."""

    def __init__(
        self,
        session: AsyncSessionHandle,
        geometry: ScreenGeometry,
        *,
        dialect: Dialect,
        quality: int | None = None,
        settle: Settle | bool = True,
    ) -> None:
        self.session = session
        self._state = _RunnerState(geometry, dialect, quality, settle)

    @property
    def geometry(self) -> ScreenGeometry:
        """The geometry declared to the model."""
        return self._state.geometry

    async def screenshot(self, region: Region | None = None) -> Screenshot:
        """A screenshot at the image size the model works in (or of a native region)."""
        return await self.session.screenshot(
            max_width=self.geometry.long_edge, quality=self._state.quality, region=region
        )

    async def run(self, action: Mapping[str, Any]) -> ActionResult:
        """Execute one action; UnsupportedActionError is meant for the model to read."""
        plan = self._state.plan(action)
        for batch, settle in self._state.batches(plan):
            await self.session.act(batch, settle=settle)
        wait = HostWait(plan.wait_s)
        while (step := wait.next()) is not None:
            until, timeout_ms, quiet_ms = step
            result = await self.session.wait_for(until, timeout_ms=timeout_ms, quiet_ms=quiet_ms)
            wait.record(result)
        text = self._state.after(plan)
        shot = None
        if plan.zoom is not None or plan.wants_screenshot:
            shot = await self.screenshot(plan.zoom)
        return ActionResult(plan=plan, screenshot=shot, text=text)
