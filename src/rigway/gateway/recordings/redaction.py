"""What a recording keeps of an input batch: text typed into a masked field is
`[redacted]`, as its value is in the targets.

The host redacts masked values before they leave the rig, but the text of an input
event comes from the API caller and goes to the host as it is. The recorder decides
where it went from the targets it last saw (the latest observe of the session, which an
input batch's own observe updates): the focused target at the start of the batch, and
each pointer press or click that lands on a known target (by its id or its bounds)
moves the focus there. While the focus is on a masked target, `type_text`'s text and
the key of a one-character key event are stored as `[redacted]`. A press on no known
target leaves the focus where it was, and so does a key like tab: the recorder cannot
tell where such a focus went, and errs on the side of redacting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rigway.protocol.ops import MASKED_VALUE

__all__ = ["redact_events"]

_FOCUSING = frozenset({"mouse_click", "mouse_down"})
_KEYS = frozenset({"key_press", "key_down", "key_up"})


def redact_events(
    events: Sequence[Mapping[str, Any]], targets: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The events as a recording keeps them; `targets` are the last ones seen."""
    focused = next((t for t in targets if t.get("focused")), None)
    is_masked = focused is not None and bool(focused.get("masked"))
    kept = []
    for event in events:
        kind = event.get("type")
        if kind in _FOCUSING:
            landed = _target_of(event, targets)
            if landed is not None:
                is_masked = bool(landed.get("masked"))
        copy = dict(event)
        if is_masked and kind == "type_text" and copy.get("text") is not None:
            copy["text"] = MASKED_VALUE
        if is_masked and kind in _KEYS and len(str(copy.get("key") or "")) == 1:
            copy["key"] = MASKED_VALUE
        kept.append(copy)
    return kept


def _target_of(
    event: Mapping[str, Any], targets: Sequence[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    target_id = event.get("target")
    if target_id is not None:
        return next((t for t in targets if t.get("id") == target_id), None)
    x, y = event.get("x"), event.get("y")
    if x is None or y is None:
        return None
    # The smallest target under the point: a field inside a pane, not the pane.
    under = [t for t in targets if t["x"] <= x < t["x"] + t["w"] and t["y"] <= y < t["y"] + t["h"]]
    return min(under, key=lambda t: t["w"] * t["h"], default=None)
