"""The Rigway MCP server: one rig's session as tools for LLM clients (`rigway mcp`).

See `rigway.mcp.server`; it uses the SDK (`rigway.client`) only, never the gateway or
the agent.
"""

from .server import DEFAULT_MAX_WIDTH, LazySession, McpSettings, RigTools, build_server, serve

__all__ = ["DEFAULT_MAX_WIDTH", "LazySession", "McpSettings", "RigTools", "build_server", "serve"]
