"""Run a coroutine on the fastest event loop this machine has.

uvloop (libuv) roughly halves the per-message cost of the host link and the HTTP path
next to asyncio's default loop; it does not exist on Windows, where asyncio's
proactor loop is used.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

_T = TypeVar("_T")


def run(main: Coroutine[Any, Any, _T]) -> _T:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)
