"""An MCP server that lets an LLM client see and drive one rig through a Rigway session.

Built on the official `mcp` package (`MCPServer`) and the SDK's `AsyncRigway` only.
The session starts lazily, on the first tool call that needs it, and ends when the
server shuts down (stdin closed, SIGINT/SIGTERM, or the `end_session` tool); a tool
call after `end_session` starts a new one.

Tools: `observe` (image + numbered target lines), `screenshot` (image), `click` (a
target's number, id or name, or x,y), `type_text`, `key`, `scroll`, `drag`, `wait`,
`launch`, `end_session`. The acting tools (click, type_text, key, scroll, drag) send
one batch that lets the screen settle and observes after it, so a model sees the result
of each step in the same tool call (`observe=false`: text only); `wait` and `launch`
observe after too. Points given as `x`,`y` are pixels of the latest image this server
returned (mapped back to native desktop pixels), or native pixels before any image.
API failures come back as tool errors whose text carries the gateway's code and
request id, so the model can react. The observing tools declare `Observation` as their
output schema and return it as structured content (targets, geometry, desktop_state)
beside the image and text; `--tools`/`--exclude-tools` choose which tools are served
and `--http` off loopback needs a bearer token (`rigway.mcp._http`).
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Annotated, Literal, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ImageContent, ToolAnnotations
from pydantic import Field

from rigway import __version__
from rigway.client import (
    ActOptions,
    ActResult,
    AsyncRigway,
    AsyncSessionHandle,
    ObserveOptions,
    ObserveResult,
    RigwayError,
    Screenshot,
    Session,
    SessionEndedError,
    WaitTarget,
)

from ._content import acted_answer, image_content, observe_answer, text_answer
from ._http import serve_http
from ._structured import Observation

__all__ = [
    "DEFAULT_MAX_WIDTH",
    "TOOL_NAMES",
    "LazySession",
    "McpSettings",
    "RigTools",
    "build_server",
    "serve",
]

T = TypeVar("T")
logger = logging.getLogger(__name__)
Transport = Literal["stdio", "streamable-http"]

# Images wider than this cost the model tokens without helping it read the screen.
DEFAULT_MAX_WIDTH = 1280
# The gateway bounds an end (with the host's safety restore) at 10 s; leave it room.
END_TIMEOUT_S = 15.0
# How long `launch` waits for the new program to show (then to finish drawing).
LAUNCH_WAIT_MS = 5000
INSTRUCTIONS = (
    "These tools drive one remote desktop (a Rigway rig). Call observe first: it returns "
    "a screenshot and the clickable targets, numbered. Prefer click(index=n) or "
    "click(target=id or name). Coordinates: target boxes (x, y, w, h in structured "
    "content) are native capture pixels of the rig's desktop; the x,y arguments of "
    "click, scroll and drag are pixels of the latest image, which may be downscaled "
    "(structured content's geometry.scale = image pixels per native pixel). Every acting "
    "tool returns a fresh screenshot and targets once the screen has settled, so there is "
    "no need to observe between steps. Call end_session when done (billing stops)."
)
# The tools' names, as `rigway mcp --tools/--exclude-tools` take them.
TOOL_NAMES = (
    "observe",
    "screenshot",
    "click",
    "type_text",
    "key",
    "scroll",
    "drag",
    "wait",
    "launch",
    "end_session",
)
# An observing tool's answer: image and text, and `Observation` as structured content.
Answer = Annotated[CallToolResult, Observation]


@dataclass(frozen=True)
class McpSettings:
    """What `rigway mcp` was started with."""

    rig_id: str
    api_key: str
    base_url: str
    max_width: int | None = DEFAULT_MAX_WIDTH
    idle_timeout_seconds: int | None = None
    transport: Transport = "stdio"
    host: str = "127.0.0.1"
    port: int = 8765
    # HTTP only: required beyond loopback (the CLI refuses to start without it).
    auth_token: str | None = None
    tools: tuple[str, ...] = TOOL_NAMES


class LazySession:
    """This server's one session: started on first use, ended on request or shutdown."""

    def __init__(
        self, client: AsyncRigway, rig_id: str, idle_timeout_seconds: int | None = None
    ) -> None:
        self._client = client
        self._rig_id = rig_id
        self._idle_timeout_seconds = idle_timeout_seconds
        self._handle: AsyncSessionHandle | None = None
        # Concurrent first calls must start one session, not two (the second is rig_busy).
        self._lock = anyio.Lock()

    @property
    def is_started(self) -> bool:
        return self._handle is not None

    async def handle(self) -> AsyncSessionHandle:
        """The live session, started now if there is none."""
        async with self._lock:
            if self._handle is None:
                self._handle = await self._client.sessions.create(
                    rig_id=self._rig_id, idle_timeout_seconds=self._idle_timeout_seconds
                )
            return self._handle

    def forget(self, handle: AsyncSessionHandle) -> None:
        """Drop a handle the gateway says is over, so the next call starts afresh."""
        if self._handle is handle:
            self._handle = None

    async def end(self) -> Session | None:
        """End the session if one is running; its final record, or None."""
        async with self._lock:
            handle, self._handle = self._handle, None
        if handle is None:
            return None
        return await handle.end()


MaxWidthArg = Annotated[
    int | None,
    Field(ge=16, le=16384, description="Cap the image's long edge, pixels (default: server's)."),
]
MarkArg = Annotated[bool, Field(description="Draw each target's box and id on the image.")]
IndexArg = Annotated[
    int | None, Field(ge=1, description="The number of a target in the latest observation.")
]
TargetArg = Annotated[
    str | None,
    Field(description="A target id (t_…) or name from the latest observation."),
]
XArg = Annotated[
    int | None, Field(description="x in pixels of the latest image (not native pixels).")
]
YArg = Annotated[
    int | None, Field(description="y in pixels of the latest image (not native pixels).")
]
ObserveArg = Annotated[
    bool,
    Field(
        description="Once the screen has settled, return a fresh screenshot and the "
        "numbered targets (default). false: answer sooner, with text only."
    ),
]
PathArg = Annotated[
    list[list[int]],
    Field(
        min_length=2,
        max_length=99,
        description="[[x, y], …] pixels of the latest image: press at the first point, "
        "move through the rest, release at the last.",
    ),
]
Button = Literal["left", "right", "middle"]


class RigTools:
    """The tools, as methods over one `LazySession` (their docstrings are what models read).

    Every acting tool sends its events in one batch that settles on the rig and, unless
    told not to, observes after: one tool call per step of the model.
    """

    def __init__(self, session: LazySession, max_width: int | None = DEFAULT_MAX_WIDTH) -> None:
        self._session = session
        self._max_width = max_width
        # Maps x,y of the image the model last saw back to native pixels.
        self._latest_image: Screenshot | None = None
        # Whose targets index/target refer to (scroll resolves them here).
        self._latest: ObserveResult | None = None

    async def _run(self, action: Callable[[AsyncSessionHandle], Awaitable[T]]) -> T:
        try:
            handle = await self._session.handle()
        except RigwayError as exc:
            raise ToolError(f"could not start a session: {exc}") from exc
        try:
            return await action(handle)
        except SessionEndedError as exc:
            self._session.forget(handle)
            self._latest_image = None
            self._latest = None
            raise ToolError(f"{exc}; the next tool call starts a new session") from exc
        except (RigwayError, ValueError) as exc:
            raise ToolError(str(exc)) from exc

    def _native(self, x: int, y: int) -> tuple[int, int]:
        if self._latest_image is None:
            return x, y
        return self._latest_image.to_native(x, y)

    def _seen(self, result: ObserveResult | None) -> None:
        if result is not None:
            self._latest = result
        shot = None if result is None else result.screenshot()
        if shot is not None:
            self._latest_image = shot

    def _options(self, observe: bool) -> ActOptions:
        if not observe:
            return {"settle": True}
        return {"settle": True, "observe": ObserveOptions(max_width=self._max_width)}

    async def _act(
        self,
        done: str,
        observe: bool,
        action: Callable[[AsyncSessionHandle, ActOptions], Awaitable[ActResult]],
    ) -> CallToolResult:
        options = self._options(observe)
        result = await self._run(lambda handle: action(handle, options))
        self._seen(result.observe)
        return acted_answer(done, result)

    async def _observe(self, width: int | None, mark: bool = False) -> ObserveResult:
        result = await self._run(lambda handle: handle.observe(max_width=width, mark=mark))
        self._seen(result)
        return result

    async def observe(self, max_width: MaxWidthArg = None, mark: MarkArg = False) -> Answer:
        """See the desktop: a screenshot plus the focused window's clickable targets.

        Each target line reads `[n] name (role) id=…`; click one with click(index=n),
        or by its id or name with click(target=…). Structured content holds the targets
        (boxes in native pixels), the geometry (geometry.scale = image pixels per native
        pixel) and desktop_state. `mark` draws each target's box and number on the
        image. `max_width` caps the image's long edge (default set by the server).
        """
        width = max_width if max_width is not None else self._max_width
        return observe_answer(await self._observe(width, mark))

    async def screenshot(self, max_width: MaxWidthArg = None) -> ImageContent:
        """A JPEG of the whole desktop (`max_width` caps its long edge)."""
        width = max_width if max_width is not None else self._max_width
        shot = await self._run(lambda handle: handle.screenshot(max_width=width))
        self._latest_image = shot
        return image_content(shot)

    async def click(
        self,
        index: IndexArg = None,
        target: TargetArg = None,
        x: XArg = None,
        y: YArg = None,
        button: Button = "left",
        double: bool = False,
        observe: ObserveArg = True,
    ) -> Answer:
        """Click a target of the latest observation, by its number (index), its id or
        its name (target), or the point x,y of the latest image (image pixels)."""
        ways = [index is not None, target is not None, x is not None or y is not None]
        if ways.count(True) != 1 or (x is None) != (y is None):
            raise ToolError("give one of: index, target (an id or a name), or both x and y")
        ref: int | str | None = index if index is not None else target
        point = (None, None) if x is None or y is None else self._native(x, y)
        where = f"image {x},{y} (native {point[0]},{point[1]})"
        if ref is not None:
            where = f"target [{ref}]" if index is not None else f"target {ref!r}"

        def press(handle: AsyncSessionHandle, options: ActOptions) -> Awaitable[ActResult]:
            clicker = handle.double_click if double else handle.click
            return clicker(point[0], point[1], target=ref, button=button, **options)

        return await self._act(f"clicked {button} on {where}", observe, press)

    async def type_text(
        self,
        text: Annotated[str, Field(description="The text, typed as is.")],
        index: IndexArg = None,
        target: TargetArg = None,
        observe: ObserveArg = True,
    ) -> Answer:
        """Type text (any Unicode; not key names) into the focused control, or into the
        target given by index or target (id or name), which is clicked first."""
        if index is not None and target is not None:
            raise ToolError("give index or target, not both")
        ref: int | str | None = index if index is not None else target
        done = f"typed {len(text)} characters"
        if ref is not None:
            # The click settles first so the field has focus before the first character.
            await self._run(lambda handle: handle.click(target=ref, settle=True))
            done = f"clicked target {ref!r}, then {done}"
        return await self._act(
            done, observe, lambda handle, options: handle.type_text(text, **options)
        )

    async def key(
        self,
        key: Annotated[str, Field(description="A key name or chord such as ctrl+s.")],
        observe: ObserveArg = True,
    ) -> Answer:
        """Press a key or chord: enter, tab, escape, backspace, ctrl+s, alt+f4, …"""
        return await self._act(
            f"pressed {key}", observe, lambda handle, options: handle.key(key, **options)
        )

    async def scroll(
        self,
        dy: Annotated[int, Field(description="Notches; negative scrolls down.")] = -3,
        dx: Annotated[int, Field(description="Notches; positive scrolls right.")] = 0,
        x: XArg = None,
        y: YArg = None,
        index: IndexArg = None,
        target: TargetArg = None,
        observe: ObserveArg = True,
    ) -> Answer:
        """Scroll by wheel notches (dy < 0 scrolls down) over a target (index, or target:
        an id or name), over x,y of the latest image (image pixels), or where the
        pointer is."""
        ways = [index is not None, target is not None, x is not None or y is not None]
        if ways.count(True) > 1 or (x is None) != (y is None):
            raise ToolError("give at most one of: index, target, or both x and y")
        ref: int | str | None = index if index is not None else target
        px, py = (None, None) if x is None or y is None else self._native(x, y)
        if ref is not None:
            px, py = await self._target_center(ref)
        return await self._act(
            f"scrolled dx={dx} dy={dy}",
            observe,
            lambda handle, options: handle.scroll(dx, dy, x=px, y=py, **options),
        )

    async def _target_center(self, ref: int | str) -> tuple[int, int]:
        """The native centre of target `ref` in the latest observation (else observe)."""
        latest = self._latest
        if latest is None or (found := latest.lookup(ref)) is None:
            latest = await self._observe(self._max_width)
            found = latest.lookup(ref)
        if found is None:
            raise ToolError(f"no target {ref!r} in the latest observation")
        return found.center

    async def drag(
        self, path: PathArg, button: Button = "left", observe: ObserveArg = True
    ) -> Answer:
        """Drag with a mouse button held: press at the first point of `path`, move
        through the others, release at the last (sliders, selections, drag and drop)."""
        if any(len(point) != 2 for point in path):
            raise ToolError("path is a list of [x, y] points")
        native = [self._native(point[0], point[1]) for point in path]
        (x0, y0), (x1, y1) = path[0], path[-1]
        return await self._act(
            f"dragged {button} from image {x0},{y0} to {x1},{y1}",
            observe,
            lambda handle, options: handle.drag(native, button=button, **options),
        )

    async def wait(
        self,
        until: Annotated[
            Literal["change", "quiet", "target"],
            Field(description="change: anything redrawn; quiet: still; target: a control."),
        ],
        name: Annotated[str | None, Field(description="target: part of its name.")] = None,
        role: Annotated[str | None, Field(description="target: its role.")] = None,
        timeout_ms: Annotated[int, Field(ge=1, le=30000, description="Give up after.")] = 5000,
        observe: ObserveArg = True,
    ) -> Answer:
        """Wait on the rig for the screen to change, to go still, or for a control to
        appear in the focused window (until=target with a name and/or role)."""
        wanted = WaitTarget(name=name, role=role) if until == "target" else None
        if (wanted is not None) != (name is not None or role is not None):
            raise ToolError("name and role go with until=target, which needs one of them")
        result = await self._run(
            lambda handle: handle.wait_for(until, timeout_ms=timeout_ms, target=wanted)
        )
        text = result.outcome_line(until, timeout_ms)
        if not observe:
            return text_answer(text)
        return observe_answer(await self._observe(self._max_width), first_line=text, done=text)

    async def launch(
        self,
        path: Annotated[str, Field(description="Absolute path, or a name on the rig's PATH.")],
        args: Annotated[list[str] | None, Field(description="Command-line arguments.")] = None,
        observe: ObserveArg = True,
    ) -> Answer:
        """Start a program on the rig by absolute path or by name on its PATH."""
        result = await self._run(lambda handle: handle.launch(path, args))
        done = f"launched {path} as pid {result.pid}"
        if not observe:
            return text_answer(done)
        # A window takes a moment to appear, then to finish drawing.
        waited = await self._run(lambda h: h.wait_for("change", timeout_ms=LAUNCH_WAIT_MS))
        if waited.met:
            await self._run(lambda h: h.wait_for("quiet", timeout_ms=LAUNCH_WAIT_MS))
        return observe_answer(await self._observe(self._max_width), first_line=done, done=done)

    def acting(self) -> tuple[Callable[..., Awaitable[CallToolResult]], ...]:
        """The tools that change the rig and answer with the settled screen."""
        return (self.click, self.type_text, self.key, self.scroll, self.drag, self.launch)

    async def end_session(self) -> str:
        """End the session (billing stops); a later tool call starts a new one."""
        try:
            session = await self._session.end()
        except RigwayError as exc:
            raise ToolError(str(exc)) from exc
        self._latest_image = None
        self._latest = None
        if session is None:
            return "no session was running"
        return (
            f"ended {session.session_id} ({session.ended_reason}), "
            f"billed {session.billed_minutes} min"
        )


def build_server(tools: RigTools, only: Collection[str] = TOOL_NAMES) -> MCPServer:
    """An `MCPServer` exposing `tools` (those named in `only`); the observing tools
    declare `Observation` as their output schema and return it as structured content."""
    unknown = set(only) - set(TOOL_NAMES)
    if unknown:
        raise ValueError(f"unknown tools: {', '.join(sorted(unknown))}")
    # WARNING: at INFO the SDK logs every HTTP request of every tool call to stderr.
    server: MCPServer = MCPServer(
        "rigway", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    looking = ToolAnnotations(read_only_hint=True, open_world_hint=True)
    acting = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True)
    # A wait changes nothing on the rig, but what it sees depends on the world.
    waiting = ToolAnnotations(read_only_hint=True, open_world_hint=True)
    ending = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
    registry: list[tuple[Callable[..., Awaitable[object]], ToolAnnotations, bool | None]] = [
        (tools.observe, looking, None),
        (tools.screenshot, looking, False),
        *((action, acting, None) for action in tools.acting()),
        (tools.wait, waiting, None),
        (tools.end_session, ending, False),
    ]
    for fn, hints, structured in registry:
        if fn.__name__ in only:
            server.add_tool(fn, annotations=hints, structured_output=structured)
    return server


async def _end_on_signal(session: LazySession) -> None:
    """On SIGINT/SIGTERM: end the session, then die of the signal as if it were unhandled.

    The stdio transport reads stdin in a thread that no cancellation interrupts, so an
    orderly unwind could hang until the client closes the pipe. Stopping the meter here
    and then re-raising the signal with its default action is prompt on every transport.
    """
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            await _end_on_exit(session)
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)


async def _run_transport(server: MCPServer, settings: McpSettings) -> None:
    if settings.transport == "stdio":
        await server.run_stdio_async()
    else:
        await serve_http(server, settings.host, settings.port, settings.auth_token)


async def serve(settings: McpSettings) -> None:
    """Run the server until its transport closes or a signal arrives; end the session."""
    async with AsyncRigway(api_key=settings.api_key, base_url=settings.base_url) as client:
        session = LazySession(client, settings.rig_id, settings.idle_timeout_seconds)
        server = build_server(RigTools(session, settings.max_width), only=settings.tools)
        try:
            async with anyio.create_task_group() as group:
                if sys.platform != "win32":  # no signal receivers there; Ctrl+C unwinds
                    group.start_soon(_end_on_signal, session)
                await _run_transport(server, settings)
                group.cancel_scope.cancel()
        finally:
            await _end_on_exit(session)


async def _end_on_exit(session: LazySession) -> None:
    # Shielded: a cancelled server must still stop the meter on its way out.
    ended: Session | None = None
    with anyio.CancelScope(shield=True), anyio.move_on_after(END_TIMEOUT_S) as deadline:
        try:
            ended = await session.end()
        except RigwayError as exc:
            logger.warning("rigway mcp: could not end the session: %s", exc)
            return
    if deadline.cancelled_caught:
        logger.warning("rigway mcp: ending the session took over %s s; gave up", END_TIMEOUT_S)
    elif ended is not None:
        logger.info("rigway mcp: ended %s, billed %s min", ended.session_id, ended.billed_minutes)
