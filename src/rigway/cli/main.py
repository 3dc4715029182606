"""Entry point of the `rigway` command.

Command groups: `up` (local deployment), `agent` (the host agent on a rig), `release`
(signing host agent releases), and the API tools: `rigs`, `sessions`, `screenshot`,
`observe`, `click`, `type`, `key`, `drag`, `wait` (API key); `keys`, `webhooks`
(console token); `mcp` (an MCP server for LLM clients).

Every API command takes `--json` (one JSON document on stdout, nothing else) and
reports an API failure as one line on stderr, `rigway: error: <code>: <detail>
(HTTP <status>, request id <id>)`, never a traceback. Exit codes:

```
0  ok
1  unexpected error
2  usage: bad arguments, no session to act on, ambiguous target name, 400
3  auth: no credentials, 401, 403
4  not found: 404, or no target with that id, name or number
5  conflict: 409 (rig offline/busy, limits, a stopped batch), 410 session ended
6  rate limited: 429
7  host or server error: 502, 504, other 5xx
8  connection error: gateway unreachable or no answer in time
9  not met: `rigway wait` timed out
```
"""

from __future__ import annotations

import sys
from typing import NoReturn

import typer

from rigway.cli._output import EXIT_CODES_HELP, CliError, error_line, exit_code_for
from rigway.cli.act_commands import register_act_commands
from rigway.cli.agent import agent_app
from rigway.cli.console_commands import keys_app, webhooks_app
from rigway.cli.mcp_command import mcp_command
from rigway.cli.release import release_app
from rigway.cli.rigs import rigs_app
from rigway.cli.screen import register_screen_commands
from rigway.cli.sessions import sessions_app
from rigway.client import RigwayError

app = typer.Typer(
    name="rigway",
    help="See and drive real desktops: local deployment, host agent, API tools.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.command(
    "up",
    # Every argument, --help included, goes to the real command once it is imported.
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def up_command(ctx: typer.Context) -> None:
    """Run the gateway with local rigs until interrupted (`rigway up --help`)."""
    # Imported on use: the gateway stack takes seconds to import, which every other
    # command (and every script calling it) would otherwise pay.
    from rigway.cli.up import up

    up_app = typer.Typer(pretty_exceptions_enable=False, add_completion=False)
    up_app.command()(up)
    up_app(args=ctx.args, prog_name="rigway up")


app.add_typer(agent_app, name="agent")
app.add_typer(release_app, name="release")
app.add_typer(rigs_app, name="rigs")
app.add_typer(sessions_app, name="sessions")
register_screen_commands(app)
register_act_commands(app)
app.add_typer(keys_app, name="keys")
app.add_typer(webhooks_app, name="webhooks")
app.command("mcp")(mcp_command)


def _fail(message: str, exit_code: int) -> NoReturn:
    sys.stderr.write(message + "\n")
    sys.exit(exit_code)


def main() -> None:
    """Run the `rigway` command: API failures become one stderr line and an exit code."""
    try:
        app()
    except RigwayError as error:
        _fail(error_line(error), exit_code_for(error))
    except CliError as error:
        _fail(f"rigway: error: {error.message}", error.exit_code)


if __name__ == "__main__":
    main()
