"""Numbered damage, for questions of the form "what changed since mark M?".

The screen service appends every non-empty poll of the backend's damage here, beside
the dirty accumulator (which `/dirty` empties) and the streams' flags: answering a
settle, a receipt, a wait or a frame's staleness never takes a rectangle from anyone
else. A mark is the number of the last entry when it was read; `since(mark)` returns
what arrived after it.

Bounded: past `max_entries` polls the oldest are dropped and the horizon moves up.
A question about a mark older than the horizon (or from before a `clear`) answers None:
unknown, which a caller treats as "anything may have changed". Confined to the screen
worker, like the rest of the screen service's state.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from rigway.agent.backends.base import Rect

__all__ = ["DEFAULT_MAX_ENTRIES", "DamageLog"]

# A poll every 5 ms for 2.5 s of continuous change, or hours of ordinary use between
# the frames a caller may still refer to.
DEFAULT_MAX_ENTRIES = 512


class DamageLog:
    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be >= 1")
        self._entries: deque[tuple[int, tuple[Rect, ...]]] = deque(maxlen=max_entries)
        self._mark = 0
        # Marks at or after the horizon are answerable.
        self._horizon = 0

    @property
    def mark(self) -> int:
        return self._mark

    def add(self, rects: Sequence[Rect]) -> None:
        if not rects:
            return
        self._mark += 1
        if len(self._entries) == self._entries.maxlen:
            # The oldest entry goes: a mark before it can no longer be answered.
            self._horizon = self._entries[0][0]
        self._entries.append((self._mark, tuple(rects)))

    def since(self, mark: int) -> list[Rect] | None:
        """Rectangles added after `mark`, oldest first; None when the log no longer
        reaches back that far (or `mark` is not one this log gave out)."""
        if mark < self._horizon or mark > self._mark:
            return None
        return [rect for number, rects in self._entries if number > mark for rect in rects]

    def clear(self) -> None:
        """Forget everything: marks given out before now answer None."""
        self._entries.clear()
        self._mark += 1
        self._horizon = self._mark
