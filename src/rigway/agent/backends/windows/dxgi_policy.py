"""What to do when Desktop Duplication fails: HRESULT classes, backoff, giving up.

Pure. The classes follow the buckets of Microsoft's DesktopDuplication sample
(SystemTransitionsExpectedErrors, CreateDuplicationExpectedErrors,
EnumOutputsExpectedErrors) and the DuplicateOutput / AcquireNextFrame documentation:

- no change: the frame wait timed out; nothing to do.
- recreate: the duplication (or its device) is gone: a mode change, a switch to a
  fullscreen exclusive app, the secure desktop, a driver reset, an abandoned keyed
  mutex. Build a new one.
- transient creation: a new one cannot be had *yet* (the secure desktop or a locked
  session: E_ACCESSDENIED; a mode switch: UNSUPPORTED; too many duplications in the
  session; the output gone for a moment; E_INVALIDARG from DuplicateOutput while an
  earlier duplication of the output by this process is not released yet). Retry later.
- fatal: anything else; DXGI will not work here, use GDI.

Retries are paced by `ProgressiveWait` (the sample's 250 ms x20, 2 s x60, then 5 s),
which reads an injected clock and never sleeps: the capture asks `may_retry` on its
own polls. `Recovery` adds the rule that gives DXGI up after a run of failures that
looks permanent (e.g. ACCESS_LOST for ever on an SR-IOV virtual GPU:
https://github.com/VirtualDrivers/Virtual-Display-Driver/issues/399).

https://learn.microsoft.com/en-us/windows/win32/api/dxgi1_2/nf-dxgi1_2-idxgioutput1-duplicateoutput
"""

from __future__ import annotations

import enum
from typing import Protocol

from rigway.agent.backends.windows.dxgi_types import (
    DXGI_ERROR_ACCESS_LOST,
    DXGI_ERROR_DEVICE_REMOVED,
    DXGI_ERROR_DEVICE_RESET,
    DXGI_ERROR_INVALID_CALL,
    DXGI_ERROR_NOT_CURRENTLY_AVAILABLE,
    DXGI_ERROR_NOT_FOUND,
    DXGI_ERROR_SESSION_DISCONNECTED,
    DXGI_ERROR_UNSUPPORTED,
    DXGI_ERROR_WAIT_TIMEOUT,
    E_ACCESSDENIED,
    E_INVALIDARG,
    WAIT_ABANDONED,
    hresult,
    hresult_name,
)

__all__ = [
    "DEFAULT_GIVE_UP_AFTER",
    "DUPLICATE_OUTPUT",
    "DxgiUnavailableError",
    "Failure",
    "HResultError",
    "MonotonicClock",
    "ProgressiveWait",
    "Recovery",
    "classify",
    "classify_creation",
]

# The operation name a failed IDXGIOutput1::DuplicateOutput carries.
DUPLICATE_OUTPUT = "DuplicateOutput"


class MonotonicClock(Protocol):
    def monotonic(self) -> float: ...


class HResultError(OSError):
    """A DXGI/D3D11 call failed with `hresult` (signed, as C has it).

    `required_bytes` is set for DXGI_ERROR_MORE_DATA from the metadata calls: the size
    Windows asked for."""

    def __init__(self, code: int, operation: str, *, required_bytes: int | None = None) -> None:
        self.hresult = hresult(code)
        self.operation = operation
        self.required_bytes = required_bytes
        super().__init__(f"{operation} failed: {hresult_name(code)}")


class DxgiUnavailableError(OSError):
    """Desktop Duplication cannot be had here (a fatal error, or the give-up rule):
    capture falls back to GDI."""


class Failure(enum.Enum):
    NO_CHANGE = "no_change"
    RECREATE = "recreate"
    TRANSIENT_CREATION = "transient_creation"
    FATAL = "fatal"


_RECREATE = frozenset(
    {
        DXGI_ERROR_ACCESS_LOST,
        DXGI_ERROR_DEVICE_REMOVED,
        DXGI_ERROR_DEVICE_RESET,
        WAIT_ABANDONED,
        # A frame acquired twice without a release: our state and DXGI's disagree, and
        # a new duplication is the one way to agree again.
        DXGI_ERROR_INVALID_CALL,
    }
)
_TRANSIENT_CREATION = frozenset(
    {
        E_ACCESSDENIED,
        DXGI_ERROR_UNSUPPORTED,
        DXGI_ERROR_SESSION_DISCONNECTED,
        DXGI_ERROR_NOT_CURRENTLY_AVAILABLE,
        # Enumeration during a mode change or a hot-plug can miss the output for a while.
        DXGI_ERROR_NOT_FOUND,
    }
)
# The desktop is not ours to see for now (the secure desktop, a locked or disconnected
# session): this can last for hours and says nothing about whether DXGI works, so these
# never count towards giving up.
_DESKTOP_AWAY = frozenset({E_ACCESSDENIED, DXGI_ERROR_SESSION_DISCONNECTED})

DEFAULT_GIVE_UP_AFTER = 30


def classify(code: int) -> Failure:
    signed = hresult(code)
    if signed == DXGI_ERROR_WAIT_TIMEOUT:
        return Failure.NO_CHANGE
    if signed in _RECREATE:
        return Failure.RECREATE
    if signed in _TRANSIENT_CREATION:
        return Failure.TRANSIENT_CREATION
    return Failure.FATAL


def classify_creation(error: HResultError) -> Failure:
    """`classify` for a failed creation. DuplicateOutput answers E_INVALIDARG while this
    process still duplicates the output: a lost duplication (or an earlier desktop's)
    whose last reference has not gone yet. That passes, so it is transient; it counts
    towards giving up, which covers the other meaning (a device on the wrong adapter)."""
    if error.hresult == E_INVALIDARG and error.operation == DUPLICATE_OUTPUT:
        return Failure.TRANSIENT_CREATION
    return classify(error.hresult)


class ProgressiveWait:
    """How long to wait before the next attempt, growing with consecutive failures."""

    # (delay, how many attempts at it); the last band has no end.
    BANDS: tuple[tuple[float, int | None], ...] = ((0.25, 20), (2.0, 60), (5.0, None))

    def __init__(self, clock: MonotonicClock) -> None:
        self._clock = clock
        self._failures = 0
        self._next_attempt_at: float | None = None

    @property
    def failures(self) -> int:
        return self._failures

    def delay_s(self, failures: int) -> float:
        """The wait after the `failures`-th consecutive failure (1-based)."""
        passed = 0
        for delay_s, count in self.BANDS:
            if count is None or failures <= passed + count:
                return delay_s
            passed += count
        raise AssertionError("the last band has no end")

    def record_failure(self) -> float:
        """Count a failure now; returns the wait before the next attempt."""
        self._failures += 1
        delay_s = self.delay_s(self._failures)
        self._next_attempt_at = self._clock.monotonic() + delay_s
        return delay_s

    def may_retry(self) -> bool:
        return self._next_attempt_at is None or self._clock.monotonic() >= self._next_attempt_at

    def reset(self) -> None:
        self._failures = 0
        self._next_attempt_at = None


class Recovery:
    """The state of getting a duplication back, and when to stop trying.

    Each failure (a lost duplication, a failed creation) waits its `ProgressiveWait`
    step before the next attempt: no recreate right after ACCESS_LOST
    (https://github.com/rustdesk/rustdesk/pull/16024). A run of `give_up_after`
    failures that count ends DXGI: failed creations other than "the desktop is away",
    losses before the duplication delivered a single frame, and losses to an
    unexpected error. A fatal creation error ends it at once. A delivered frame resets
    everything."""

    def __init__(self, clock: MonotonicClock, give_up_after: int = DEFAULT_GIVE_UP_AFTER) -> None:
        if give_up_after < 1:
            raise ValueError("give_up_after must be at least 1")
        self._wait = ProgressiveWait(clock)
        self._give_up_after = give_up_after
        self._counted = 0
        self._delivered_since_create = False
        self._reason: str | None = None

    @property
    def is_exhausted(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        """Why DXGI was given up, once it is."""
        return self._reason

    def may_retry(self) -> bool:
        return not self.is_exhausted and self._wait.may_retry()

    def lost(self, error: HResultError) -> None:
        """The duplication stopped working. A loss after delivered frames is the normal
        life of a duplication (mode changes, the secure desktop), unless the error is
        one nobody expects, which counts every time."""
        if not self._delivered_since_create or classify(error.hresult) is Failure.FATAL:
            self._count(error)
        self._delivered_since_create = False
        self._wait.record_failure()

    def creation_failed(self, error: HResultError) -> None:
        failure = classify_creation(error)
        if failure not in (Failure.RECREATE, Failure.TRANSIENT_CREATION):
            self._reason = str(error)
            return
        if error.hresult not in _DESKTOP_AWAY:
            self._count(error)
        self._wait.record_failure()

    def created(self) -> None:
        self._delivered_since_create = False

    def delivered(self) -> None:
        """The duplication handed out a frame: it works."""
        self._delivered_since_create = True
        self._counted = 0
        self._wait.reset()

    def _count(self, error: HResultError) -> None:
        self._counted += 1
        if self._counted >= self._give_up_after:
            self._reason = f"{self._counted} attempts in a row failed, the last: {error}"
