"""`rigway mcp`: serve one rig's session to LLM clients over MCP (stdio or HTTP)."""

from __future__ import annotations

from typing import Annotated

import typer

from ._context import DEFAULT_STATE_DIR, ApiKeyOption, BaseUrlOption, Credentials, StateDirOption

__all__ = ["mcp_command"]


def mcp_command(
    rig: Annotated[str, typer.Option("--rig", help="The rig whose session the tools drive.")],
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP at /mcp instead of stdio.")
    ] = False,
    host: Annotated[str, typer.Option("--host", help="HTTP only: address to listen on.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", help="HTTP only: port to listen on.")] = 8765,
    max_width: Annotated[
        int,
        typer.Option("--max-width", min=0, help="Cap images' long edge; 0 sends native size."),
    ] = 1280,
    idle_timeout: Annotated[
        int | None,
        typer.Option("--idle-timeout", min=60, max=3600, help="Session idle timeout, seconds."),
    ] = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
) -> None:
    """Run an MCP server whose tools see and drive RIG (session started on first use).

    Tools: observe, screenshot, click, type_text, key, scroll, drag, wait, launch,
    end_session; the acting ones answer with the settled screen.
    The session ends when the server stops. With stdio, nothing but MCP goes to stdout.
    """
    # Imported here: the MCP stack costs a second of start-up the other commands skip.
    import anyio

    from rigway.mcp.server import McpSettings, serve

    resolved_key, resolved_url = Credentials(state_dir, api_key, base_url).api_key_and_url()
    settings = McpSettings(
        rig_id=rig,
        api_key=resolved_key,
        base_url=resolved_url,
        max_width=max_width or None,
        idle_timeout_seconds=idle_timeout,
        transport="streamable-http" if http else "stdio",
        host=host,
        port=port,
    )
    anyio.run(serve, settings)
