"""The base of every SDK model, shared by the model modules.

Models accept fields they do not know (`extra="allow"`) so an SDK built today keeps
working against a gateway that adds fields tomorrow; unknown fields stay reachable
through `model_extra`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["ApiModel", "MouseButton"]

MouseButton = Literal["left", "right", "middle"]


class ApiModel(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
