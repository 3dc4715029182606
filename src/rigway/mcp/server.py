"""An MCP server that lets an LLM client see and drive one rig through a Rigway session.

Built on the official `mcp` package (`MCPServer`) and the SDK's `AsyncRigway` only.
The session starts lazily, on the first tool call that needs it, and ends when the
server shuts down (stdin closed, SIGINT/SIGTERM, or the `end_session` tool); a tool
call after `end_session` starts a new one.

Tools: `observe` (image + target lines), `screenshot` (image), `click` (target id or
x,y), `type_text`, `key`, `scroll`, `launch`, `end_session`. Points given as `x`,`y`
are pixels of the latest image this server returned (mapped back to native desktop
pixels), or native pixels before any image. API failures come back as tool errors
whose text carries the gateway's code and request id, so the model can react.
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Literal, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent, TextContent, ToolAnnotations
from pydantic import Field

from rigway import __version__
from rigway.client import (
    AsyncRigway,
    AsyncSessionHandle,
    InputResult,
    ObserveResult,
    RigwayError,
    Screenshot,
    Session,
    SessionEndedError,
)

__all__ = ["DEFAULT_MAX_WIDTH", "LazySession", "McpSettings", "RigTools", "build_server", "serve"]

T = TypeVar("T")
logger = logging.getLogger(__name__)
Transport = Literal["stdio", "streamable-http"]

# Images wider than this cost the model tokens without helping it read the screen.
DEFAULT_MAX_WIDTH = 1280
# The gateway bounds an end (with the host's safety restore) at 10 s; leave it room.
END_TIMEOUT_S = 15.0
INSTRUCTIONS = (
    "These tools drive one remote desktop (a Rigway rig). Call observe first: it returns "
    "a screenshot and the clickable targets with their ids. Prefer click(target=id); "
    "x,y are pixels of the latest image. Call end_session when done (billing stops)."
)


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


def _image_content(shot: Screenshot) -> ImageContent:
    return ImageContent(type="image", data=shot.base64(), mime_type="image/jpeg")


def _observe_text(result: ObserveResult) -> str:
    lines = [
        f"image {result.width}x{result.height} of the {result.native_width}x"
        f"{result.native_height} desktop; click(x, y) takes pixels of this image",
    ]
    if result.text is not None:
        if result.text.summary:
            lines.insert(0, result.text.summary)
        lines.extend(result.text.targets)
    return "\n".join(lines)


MaxWidthArg = Annotated[
    int | None,
    Field(ge=16, le=16384, description="Cap the image's long edge, pixels (default: server's)."),
]
MarkArg = Annotated[bool, Field(description="Draw each target's box and index on the image.")]
TargetArg = Annotated[str | None, Field(description="A target id from observe, e.g. t_1a2b3c.")]
XArg = Annotated[int | None, Field(description="x in pixels of the latest image.")]
YArg = Annotated[int | None, Field(description="y in pixels of the latest image.")]


def _press(handle: AsyncSessionHandle, double: bool) -> Callable[..., Awaitable[InputResult]]:
    return handle.double_click if double else handle.click


class RigTools:
    """The tools, as methods over one `LazySession` (their docstrings are what models read)."""

    def __init__(self, session: LazySession, max_width: int | None = DEFAULT_MAX_WIDTH) -> None:
        self._session = session
        self._max_width = max_width
        # Maps x,y of the image the model last saw back to native pixels.
        self._latest_image: Screenshot | None = None

    async def _run(self, action: Callable[[AsyncSessionHandle], Awaitable[T]]) -> T:
        try:
            handle = await self._session.handle()
        except RigwayError as exc:
            raise ToolError(f"could not start a session: {exc}") from exc
        try:
            return await action(handle)
        except SessionEndedError as exc:
            self._session.forget(handle)
            raise ToolError(f"{exc}; the next tool call starts a new session") from exc
        except (RigwayError, ValueError) as exc:
            raise ToolError(str(exc)) from exc

    def _native(self, x: int, y: int) -> tuple[int, int]:
        if self._latest_image is None:
            return x, y
        return self._latest_image.to_native(x, y)

    async def observe(
        self, max_width: MaxWidthArg = None, mark: MarkArg = False
    ) -> list[ImageContent | TextContent]:
        """See the desktop: a screenshot plus the focused window's clickable targets.

        Each target line reads `[index] name (role) id=…`; click one with click(target=id).
        `mark` draws each target's box and index on the image. `max_width` caps the
        image's long edge (default set by the server).
        """
        width = max_width if max_width is not None else self._max_width
        result = await self._run(lambda handle: handle.observe(max_width=width, mark=mark))
        content: list[ImageContent | TextContent] = []
        shot = result.screenshot()
        if shot is not None:
            self._latest_image = shot
            content.append(_image_content(shot))
        content.append(TextContent(type="text", text=_observe_text(result)))
        return content

    async def screenshot(self, max_width: MaxWidthArg = None) -> ImageContent:
        """A JPEG of the whole desktop (`max_width` caps its long edge)."""
        width = max_width if max_width is not None else self._max_width
        shot = await self._run(lambda handle: handle.screenshot(max_width=width))
        self._latest_image = shot
        return _image_content(shot)

    async def click(
        self,
        target: TargetArg = None,
        x: XArg = None,
        y: YArg = None,
        button: Literal["left", "right", "middle"] = "left",
        double: bool = False,
    ) -> str:
        """Click a target by its id (from observe), or the point x,y of the latest image."""
        if target is not None and x is None and y is None:
            await self._run(lambda h: _press(h, double)(target=target, button=button))
            return f"clicked {button} on target {target}"
        if target is not None or x is None or y is None:
            raise ToolError("give either target (an id from observe) or both x and y")
        nx, ny = self._native(x, y)
        await self._run(lambda h: _press(h, double)(nx, ny, button=button))
        return f"clicked {button} at image {x},{y} (native {nx},{ny})"

    async def type_text(
        self, text: Annotated[str, Field(description="The text, typed as is.")]
    ) -> str:
        """Type text into the focused control (any Unicode; not key names)."""
        await self._run(lambda handle: handle.type_text(text))
        return f"typed {len(text)} characters"

    async def key(
        self, key: Annotated[str, Field(description="A key name or chord such as ctrl+s.")]
    ) -> str:
        """Press a key or chord: enter, tab, escape, backspace, ctrl+s, alt+f4, …"""
        await self._run(lambda handle: handle.key(key))
        return f"pressed {key}"

    async def scroll(
        self,
        dy: Annotated[int, Field(description="Notches; negative scrolls down.")] = -3,
        dx: Annotated[int, Field(description="Notches; positive scrolls right.")] = 0,
        x: XArg = None,
        y: YArg = None,
    ) -> str:
        """Scroll by wheel notches (dy < 0 scrolls down), at x,y of the latest image if given."""
        if (x is None) != (y is None):
            raise ToolError("give both x and y, or neither")
        point = (None, None) if x is None or y is None else self._native(x, y)
        await self._run(lambda handle: handle.scroll(dx, dy, x=point[0], y=point[1]))
        return f"scrolled dx={dx} dy={dy}"

    async def launch(
        self,
        path: Annotated[str, Field(description="Absolute path, or a name on the rig's PATH.")],
        args: Annotated[list[str] | None, Field(description="Command-line arguments.")] = None,
    ) -> str:
        """Start a program on the rig by absolute path or by name on its PATH."""
        result = await self._run(lambda handle: handle.launch(path, args))
        return f"launched {path} as pid {result.pid}"

    async def end_session(self) -> str:
        """End the session (billing stops); a later tool call starts a new one."""
        try:
            session = await self._session.end()
        except RigwayError as exc:
            raise ToolError(str(exc)) from exc
        self._latest_image = None
        if session is None:
            return "no session was running"
        return (
            f"ended {session.session_id} ({session.ended_reason}), "
            f"billed {session.billed_minutes} min"
        )


def build_server(tools: RigTools) -> MCPServer:
    """An `MCPServer` exposing `tools`; plain content results (no structured output)."""
    # WARNING: at INFO the SDK logs every HTTP request of every tool call to stderr.
    server: MCPServer = MCPServer(
        "rigway", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    looking = ToolAnnotations(read_only_hint=True, open_world_hint=True)
    acting = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True)
    server.add_tool(tools.observe, annotations=looking, structured_output=False)
    server.add_tool(tools.screenshot, annotations=looking, structured_output=False)
    for action in (tools.click, tools.type_text, tools.key, tools.scroll, tools.launch):
        server.add_tool(action, annotations=acting, structured_output=False)
    ending = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
    server.add_tool(tools.end_session, annotations=ending, structured_output=False)
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
        await server.run_streamable_http_async(host=settings.host, port=settings.port)


async def serve(settings: McpSettings) -> None:
    """Run the server until its transport closes or a signal arrives; end the session."""
    async with AsyncRigway(api_key=settings.api_key, base_url=settings.base_url) as client:
        session = LazySession(client, settings.rig_id, settings.idle_timeout_seconds)
        server = build_server(RigTools(session, settings.max_width))
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
