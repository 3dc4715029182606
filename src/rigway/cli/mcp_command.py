"""`rigway mcp`: serve one rig's session to LLM clients over MCP (stdio or HTTP)."""

from __future__ import annotations

from typing import Annotated

import typer

from ._context import DEFAULT_STATE_DIR, ApiKeyOption, BaseUrlOption, Credentials, StateDirOption

__all__ = ["mcp_command"]


def _names(option: str | None) -> set[str]:
    return {name.strip() for name in (option or "").split(",") if name.strip()}


def _chosen_tools(
    tools: str | None, exclude: str | None, known: tuple[str, ...]
) -> tuple[str, ...]:
    """The tools to serve: `--tools` (default all) minus `--exclude-tools`; exit 2 naming
    the valid ones when either lists a tool that does not exist."""
    wanted, dropped = _names(tools), _names(exclude)
    unknown = (wanted | dropped) - set(known)
    if unknown:
        typer.echo(
            f"unknown tools: {', '.join(sorted(unknown))}; valid: {', '.join(known)}", err=True
        )
        raise typer.Exit(code=2)
    chosen = tuple(name for name in known if (not wanted or name in wanted) and name not in dropped)
    if not chosen:
        typer.echo("--tools/--exclude-tools leave no tool to serve", err=True)
        raise typer.Exit(code=2)
    return chosen


def _check_listen(http: bool, host: str, auth_token: str | None) -> None:
    # Whoever reaches the endpoint drives the desktop: off loopback it must be guarded.
    from rigway.mcp._http import is_loopback

    if http and auth_token is None and not is_loopback(host):
        typer.echo(
            f"refusing to serve MCP on {host} without --auth-token (only loopback may be open)",
            err=True,
        )
        raise typer.Exit(code=2)


def mcp_command(
    rig: Annotated[str, typer.Option("--rig", help="The rig whose session the tools drive.")],
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP at /mcp instead of stdio.")
    ] = False,
    host: Annotated[str, typer.Option("--host", help="HTTP only: address to listen on.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", help="HTTP only: port to listen on.")] = 8765,
    auth_token: Annotated[
        str | None,
        typer.Option(
            "--auth-token",
            envvar="RIGWAY_MCP_AUTH_TOKEN",
            help="HTTP only: require `Authorization: Bearer TOKEN` (needed off loopback).",
        ),
    ] = None,
    tools: Annotated[
        str | None, typer.Option("--tools", help="Serve only these tools (comma-separated).")
    ] = None,
    exclude_tools: Annotated[
        str | None,
        typer.Option("--exclude-tools", help="Serve all tools but these (comma-separated)."),
    ] = None,
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

    from rigway.mcp.server import TOOL_NAMES, McpSettings, serve

    chosen = _chosen_tools(tools, exclude_tools, TOOL_NAMES)
    _check_listen(http, host, auth_token)
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
        auth_token=auth_token,
        tools=chosen,
    )
    anyio.run(serve, settings)
