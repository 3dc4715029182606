"""A small file naming the keys and buttons the agent holds down right now.

Windows keeps a key pressed through SendInput down after the process that pressed it
dies (an X server, by contrast, releases a dead client's fake input), so an agent
killed in the middle of a chord would leave the owner's Shift or Win stuck. The
`InputGuard` rewrites this journal whenever what it holds changes; the next agent to
start reads it and lets go of whatever is listed (`InputGuard.release_left_over`).

The file exists only while something is held. It is replaced atomically (a temporary
file in the same directory, then `os.replace`), so a reader sees either the old or the
new list, never half of one. It is not flushed to disk (no fsync): it guards against
the agent process dying, which leaves the operating system's file cache intact, while
a crash or power loss of the machine resets the keyboard anyway; a flush would add a
disk write-through to every key press and click for nothing. A file that cannot be
read or parsed is reported and ignored, never an obstacle to starting.

Format (JSON): {"version": 1, "keys": ["ctrl", "shift"], "buttons": ["left"]}, each
list in press order, keys as canonical names (`rigway.protocol.keys`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from rigway.agent.backends.base import MouseButton
from rigway.protocol.keys import UnknownKeyError, canonical_key

__all__ = ["JOURNAL_VERSION", "HeldInputJournal", "HeldInputs", "JournalError"]

_log = logging.getLogger(__name__)

JOURNAL_VERSION = 1
_BUTTONS: tuple[MouseButton, ...] = get_args(MouseButton)


class JournalError(Exception):
    """The journal exists but cannot be read or understood; `str()` says why."""


@dataclass(frozen=True, slots=True)
class HeldInputs:
    keys: tuple[str, ...] = ()
    buttons: tuple[MouseButton, ...] = ()

    def is_empty(self) -> bool:
        return not self.keys and not self.buttons


class HeldInputJournal:
    """The journal at `path`. Used from one thread at a time (the input worker)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # What the file holds now, as far as this process knows (None: not known yet).
        self._written: HeldInputs | None = None

    def read(self) -> HeldInputs:
        """What the file lists; nothing when there is no file. Names that are not keys
        or buttons are skipped with a warning. Raises JournalError."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return HeldInputs()
        except (OSError, UnicodeDecodeError) as exc:
            raise JournalError(f"cannot read {self.path}: {exc}") from exc
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise JournalError(f"{self.path} is not JSON: {exc}") from exc
        if not isinstance(document, dict) or document.get("version") != JOURNAL_VERSION:
            raise JournalError(f"{self.path} is not a version {JOURNAL_VERSION} journal")
        keys = _names(document.get("keys"), _is_canonical_key, self.path)
        named = _names(document.get("buttons"), _is_button, self.path)
        # Narrowed to MouseButton through the literal values, in press order.
        buttons = tuple(b for name in named for b in _BUTTONS if b == name)
        return HeldInputs(tuple(keys), buttons)

    def write(self, held: HeldInputs) -> None:
        """Make the file list `held` (no file when nothing is held); a no-op when it
        already does. Raises OSError."""
        if held == self._written:
            return
        if held.is_empty():
            self.path.unlink(missing_ok=True)
        else:
            self._replace(
                json.dumps(
                    {
                        "version": JOURNAL_VERSION,
                        "keys": list(held.keys),
                        "buttons": list(held.buttons),
                    }
                )
            )
        self._written = held

    def clear(self) -> None:
        """Remove the file (raises OSError)."""
        self._written = None
        self.path.unlink(missing_ok=True)
        self._written = HeldInputs()

    def _replace(self, text: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
            raise


def _names(value: object, is_valid: Callable[[str], bool], path: Path) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise JournalError(f"{path}: expected a list, found {type(value).__name__}")
    valid = [name for name in value if isinstance(name, str) and is_valid(name)]
    if len(valid) != len(value):
        unknown = [name for name in value if name not in valid]
        _log.warning("held-input journal %s: ignoring unknown entries %r", path, unknown)
    return list(dict.fromkeys(valid))


def _is_canonical_key(name: str) -> bool:
    try:
        return canonical_key(name) == name
    except UnknownKeyError:
        return False


def _is_button(name: str) -> bool:
    return name in _BUTTONS
