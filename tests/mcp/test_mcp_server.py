"""`rigway mcp` end to end: a stdio subprocess driven by the official MCP client library,
against a live gateway and sim rig running in the test's event loop."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, ImageContent, TextContent

from tests.e2e.harness import Stack
from tests.support.live import active_session_ids, live_stack
from tests.support.session_ends import wait_session_ended

RIGWAY_SCRIPT = Path(sys.executable).parent / "rigway"
TOOLS = {
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
}


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with live_stack(tmp_path, database_url) as running:
        yield running


def rigway_command() -> tuple[str, list[str]]:
    """The installed `rigway` console script, else the module it runs."""
    if RIGWAY_SCRIPT.exists():
        return str(RIGWAY_SCRIPT), []
    return sys.executable, ["-m", "rigway.cli.main"]


@asynccontextmanager
async def mcp_session(stack: Stack, tmp_path: Path) -> AsyncIterator[ClientSession]:
    """`rigway mcp --rig RIG` over stdio, initialized; its stderr goes to a file."""
    command, args = rigway_command()
    params = StdioServerParameters(
        command=command,
        args=[*args, "mcp", "--rig", stack.rig_ids[0]],
        env={
            "RIGWAY_API_KEY": stack.api_key,
            "RIGWAY_BASE_URL": stack.base_url,
            "RIGWAY_STATE_DIR": str(tmp_path / "mcp-state"),
        },
        cwd=tmp_path,
    )
    # A real file: the child's stderr needs a descriptor, which pytest's capture lacks.
    with (tmp_path / "mcp-stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def target_id(observe_text: str, name: str) -> str:
    match = re.search(rf"\] {re.escape(name)} \(.*?id=(\S+)", observe_text)
    assert match is not None, f"no line for {name!r} in:\n{observe_text}"
    return match.group(1)


async def test_tools_observe_click_type_and_end_drive_the_rig(stack: Stack, tmp_path: Path) -> None:
    async with mcp_session(stack, tmp_path) as mcp:
        listed = await mcp.list_tools()
        observed = await mcp.call_tool("observe", {})
        lines = text_of(observed)
        checked = await mcp.call_tool("click", {"target": target_id(lines, "Remember me")})
        focused = await mcp.call_tool("click", {"target": target_id(lines, "Username")})
        typed = await mcp.call_tool("type_text", {"text": "ada"})
        ended = await mcp.call_tool("end_session", {})

        assert {tool.name for tool in listed.tools} == TOOLS
        images = [block for block in observed.content if isinstance(block, ImageContent)]
        assert len(images) == 1
        assert images[0].mime_type == "image/jpeg"
        assert "image 1280x720 of the 1920x1080 desktop" in lines
        assert not any(r.is_error for r in (observed, checked, focused, typed, ended))
        assert stack.sim().checkbox_checked is True
        assert stack.sim().field_text("username") == "ada"
        assert text_of(ended).startswith("ended ses_")
        assert await active_session_ids(stack) == []


def number_of(observe_text: str, name: str) -> int:
    match = re.search(rf"^\[(\d+)\] {re.escape(name)} \(", observe_text, re.MULTILINE)
    assert match is not None, f"no line for {name!r} in:\n{observe_text}"
    return int(match.group(1))


async def test_acting_tools_answer_with_the_settled_screen(stack: Stack, tmp_path: Path) -> None:
    async with mcp_session(stack, tmp_path) as mcp:
        observed = await mcp.call_tool("observe", {})
        clicked = await mcp.call_tool("click", {"index": number_of(text_of(observed), "Username")})
        typed = await mcp.call_tool("type_text", {"text": "ada"})
        quick = await mcp.call_tool("key", {"key": "tab", "observe": False})
        waited = await mcp.call_tool("wait", {"until": "target", "name": "remember"})

        for result in (clicked, typed, waited):
            assert not result.is_error, text_of(result)
            assert [type(block) for block in result.content] == [ImageContent, TextContent]
            assert re.search(r"^\[1\] ", text_of(result), re.MULTILINE)
        assert "the screen settled after" in text_of(typed).splitlines()[0]
        assert [type(block) for block in quick.content] == [TextContent]
        assert text_of(waited).startswith("target after ")
        assert stack.sim().field_text("username") == "ada"


async def test_drag_tool_presses_and_releases_over_the_check_box(
    stack: Stack, tmp_path: Path
) -> None:
    rect = stack.sim().control_rect("remember")
    async with mcp_session(stack, tmp_path) as mcp:
        await mcp.call_tool("screenshot", {"max_width": 1920})  # image pixels are native
        path = [[rect.x + 2, rect.y + 2], [rect.x + rect.w - 3, rect.y + rect.h - 3]]
        dragged = await mcp.call_tool("drag", {"path": path})

        assert not dragged.is_error, text_of(dragged)
        assert text_of(dragged).startswith("dragged left from image ")
        assert stack.sim().checkbox_checked is True
        assert stack.sim().pressed_buttons == frozenset()


async def test_click_by_image_point_and_screenshot_content(stack: Stack, tmp_path: Path) -> None:
    rect = stack.sim().control_rect("remember")
    async with mcp_session(stack, tmp_path) as mcp:
        shot = await mcp.call_tool("screenshot", {"max_width": 960})
        # 960 is half of 1920: the image point is half the native one.
        clicked = await mcp.call_tool(
            "click", {"x": (rect.x + rect.w // 2) // 2, "y": (rect.y + rect.h // 2) // 2}
        )

        assert [type(block) for block in shot.content] == [ImageContent]
        assert not clicked.is_error, text_of(clicked)
        assert stack.sim().checkbox_checked is True


async def test_api_errors_come_back_as_tool_errors(stack: Stack, tmp_path: Path) -> None:
    async with mcp_session(stack, tmp_path) as mcp:
        unknown = await mcp.call_tool("click", {"target": "t_nope"})
        bad_key = await mcp.call_tool("key", {"key": "notakey"})
        neither = await mcp.call_tool("click", {})

        assert unknown.is_error
        assert "t_nope" in text_of(unknown)
        assert bad_key.is_error
        assert "invalid_request" in text_of(bad_key)
        assert "request id req_" in text_of(bad_key)
        assert neither.is_error


async def test_session_starts_on_first_tool_use_and_ends_on_disconnect(
    stack: Stack, tmp_path: Path
) -> None:
    async with mcp_session(stack, tmp_path) as mcp:
        await mcp.list_tools()
        before_first_tool = await active_session_ids(stack)
        await mcp.call_tool("key", {"key": "tab"})
        during = await active_session_ids(stack)

    assert before_first_tool == []
    assert len(during) == 1
    await wait_session_ended(stack.services, during[0])  # the server ends it as it exits
    assert await active_session_ids(stack) == []


async def test_server_without_credentials_exits_with_auth_code(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("RIGWAY_")}
    command, args = rigway_command()
    process = await asyncio.create_subprocess_exec(
        command,
        *args,
        "mcp",
        "--rig",
        "rig_x",
        "--state-dir",
        str(tmp_path / "empty"),
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await process.communicate()

    assert process.returncode == 3
    assert stdout == b""
    assert b"no API key" in stderr
