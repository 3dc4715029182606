"""The structured half of an observing tool's answer (MCP `structuredContent`).

Clients with structured output read targets and geometry as JSON matching the tool's
`outputSchema` (the `Observation` model); others read the same facts in the text block.
Target boxes are native capture pixels of the rig's desktop; `geometry.scale` is image
pixels per native pixel, so a point of the image is native = image / scale.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from rigway.client import ObserveResult

__all__ = ["Geometry", "Observation", "ObservedTarget", "observation_of"]


class ObservedTarget(BaseModel):
    """A control on screen; its box in native pixels of the rig's desktop."""

    index: int = Field(description="1-based, as click(index=n) counts.")
    id: str
    role: str | None = None
    name: str | None = None
    x: int
    y: int
    w: int
    h: int
    focused: bool = False
    masked: bool = False


class Geometry(BaseModel):
    """How the image maps onto the desktop."""

    native_width: int = Field(description="The desktop's width, native capture pixels.")
    native_height: int
    image_width: int = Field(description="The returned image's width, pixels.")
    image_height: int
    frame_id: str | None = Field(default=None, description="Names the image.")
    scale: float = Field(description="Image pixels per native pixel (1.0: not downscaled).")


class Observation(BaseModel):
    """What an observing tool saw: targets, geometry and the desktop's state.

    `observed` is false when the tool was told not to observe (then only `done`)."""

    done: str | None = Field(default=None, description="What the tool did, if it acted.")
    observed: bool = True
    desktop_state: str | None = Field(
        default=None, description="normal, locked, secure_desktop, screensaver, …"
    )
    owner_active: bool = Field(
        default=False,
        description="True: the rig's owner uses its keyboard or mouse; input waits for them.",
    )
    geometry: Geometry | None = None
    targets: list[ObservedTarget] = Field(default_factory=list)
    truncated: bool = Field(default=False, description="True: the target list is partial.")


def _geometry(result: ObserveResult) -> Geometry:
    # A cropped observation's image shows its region, not the whole desktop.
    area_width = result.region.w if result.region is not None else result.native_width
    return Geometry(
        native_width=result.native_width,
        native_height=result.native_height,
        image_width=result.width,
        image_height=result.height,
        frame_id=result.frame_id,
        scale=round(result.width / area_width, 6) if area_width else 1.0,
    )


def observation_of(result: ObserveResult | None, done: str | None = None) -> Observation:
    """The structured answer for `result` (None: the tool acted without observing)."""
    if result is None:
        return Observation(done=done, observed=False)
    targets = [
        ObservedTarget(
            index=number,
            id=target.id,
            role=target.role,
            name=target.name,
            x=target.x,
            y=target.y,
            w=target.w,
            h=target.h,
            focused=target.focused,
            masked=target.masked,
        )
        for number, target in enumerate(result.targets, start=1)
    ]
    return Observation(
        done=done,
        desktop_state=result.desktop_state,
        owner_active=result.owner_active,
        geometry=_geometry(result),
        targets=targets,
        truncated=result.truncated,
    )
