"""A single worker thread with a cheap bridge back to the event loop.

The screen role needs one thread that owns every backend call (capture handles are
thread-bound) and work that runs on it without blocking the loop: the JPEG encode.
`loop.run_in_executor` on a one-worker `ThreadPoolExecutor` does that, but the way
back costs: a `concurrent.futures.Future`, its callbacks, `wrap_future`'s chained
state copy and the pool's idle-semaphore bookkeeping all run on both threads around
the hand-off. Measured on a 2-vCPU VM after a 10 ms encode, that round
trip cost 0.47 ms at p50 against 0.23 ms for a queue and one `call_soon_threadsafe`
(docs/decisions/0004-screen-hot-path.md). The screenshot path pays it on every call.

`SerialWorker.call` is that short path. `submit` keeps the `Executor` interface for
callers that want a `concurrent.futures.Future` (`loop.run_in_executor`, tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from functools import partial
from typing import Any, ParamSpec, TypeVar

__all__ = ["SerialWorker"]

_log = logging.getLogger(__name__)

_T = TypeVar("_T")
_P = ParamSpec("_P")


class _Stop:
    """The sentinel that ends the worker loop."""


_STOP = _Stop()


class _LoopJob:
    """A call whose result goes to an asyncio future on `loop`."""

    __slots__ = ("args", "fn", "future", "loop")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        fn: Callable[..., Any],
        args: tuple[Any, ...],
    ) -> None:
        self.loop = loop
        self.future = future
        self.fn = fn
        self.args = args

    def run(self) -> None:
        # Reading `cancelled()` from this thread is a benign race: at worst a call
        # whose caller just gave up still runs, exactly as with an executor.
        if self.future.cancelled():
            return
        try:
            result = self.fn(*self.args)
        except StopIteration:
            # An asyncio future refuses StopIteration (it would end the awaiting task).
            self._deliver(_set_exception, RuntimeError(f"{self.fn!r} raised StopIteration"))
        except BaseException as exc:
            self._deliver(_set_exception, exc)
        else:
            self._deliver(_set_result, result)

    def cancel(self) -> None:
        self._deliver(_cancel, None)

    def _deliver(self, setter: Callable[[asyncio.Future[Any], Any], None], value: Any) -> None:
        # A loop that closed meanwhile has nobody left to tell.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(setter, self.future, value)


class _PoolJob:
    """A call whose result goes to a `concurrent.futures.Future` (`submit`)."""

    __slots__ = ("fn", "future")

    def __init__(self, future: Future[Any], fn: Callable[[], Any]) -> None:
        self.future = future
        self.fn = fn

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return
        try:
            result = self.fn()
        except BaseException as exc:
            self.future.set_exception(exc)
        else:
            self.future.set_result(result)

    def cancel(self) -> None:
        self.future.cancel()


def _set_result(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


def _cancel(future: asyncio.Future[Any], _: Any) -> None:
    future.cancel()


class SerialWorker(Executor):
    """One daemon thread running calls in submission order.

    Daemon, like the executors it replaces at exit: a backend stuck in a grab must not
    keep the agent process alive (`shutdown(wait=False)` leaves it behind)."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[_LoopJob | _PoolJob | _Stop] = queue.SimpleQueue()
        self._shutdown = False
        self._shutdown_lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    async def call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run `fn(*args)` on the worker and await its result from the event loop."""
        return await self.start(fn, *args)

    def start(self, fn: Callable[..., _T], *args: Any) -> asyncio.Future[_T]:
        """Queue `fn(*args)` now, from the event loop, and return the future of its
        result: for a caller that must not wait for its task's first step to get the
        work going (a screen capture started from the link's reader)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        self._put(_LoopJob(loop, future, fn, args))
        return future

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        future: Future[_T] = Future()
        self._put(_PoolJob(future, partial(fn, *args, **kwargs)))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._shutdown_lock:
            if not self._shutdown:
                self._shutdown = True
                if cancel_futures:
                    self._cancel_queued()
                self._jobs.put(_STOP)
        if wait and threading.current_thread() is not self._thread:
            self._thread.join()

    def _put(self, job: _LoopJob | _PoolJob) -> None:
        with self._shutdown_lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new calls after shutdown")
            self._jobs.put(job)

    def _cancel_queued(self) -> None:
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            if not isinstance(job, _Stop):
                job.cancel()

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if isinstance(job, _Stop):
                return
            try:
                job.run()
            except BaseException:  # a job reports its own failures; this is a last guard
                _log.exception("worker job failed outside its own error handling")
