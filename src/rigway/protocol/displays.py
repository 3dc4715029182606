"""The desktop's monitors on the wire: in `hello.displays` at connect, then a
`desktop/displays` note (`DisplaysNote`) each time they change while connected.

Apart from `ops` so that the hello (`messages`) and the note share one shape. A gateway
that predates the note drops it (notes it does not know are dropped).
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DESKTOP_DISPLAYS", "MAX_DISPLAYS", "DisplayInfo", "DisplaysNote"]

DESKTOP_DISPLAYS: Final = "desktop/displays"
MAX_DISPLAYS: Final = 16


class DisplayInfo(BaseModel):
    """One monitor, in native capture pixels; `scale` is its DPI scale (1.0 = 96 dpi)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    x: int = Field(ge=-65535, le=65535)
    y: int = Field(ge=-65535, le=65535)
    width: int = Field(ge=1, le=65535)
    height: int = Field(ge=1, le=65535)
    scale: float = Field(default=1.0, gt=0, le=16, allow_inf_nan=False)
    primary: bool = False


class DisplaysNote(BaseModel):
    """The monitors changed (`desktop/displays` note): all of them, as now."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    displays: list[DisplayInfo] = Field(max_length=MAX_DISPLAYS)
