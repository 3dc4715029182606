"""Entry point of the `rigway` command.

Command groups: `up` (local deployment), `agent` (the host agent on a rig), `release`
(signing host agent releases), and the API tools: `rigs`, `sessions`, `screenshot`,
`observe`, `targets`, `dirty`, `stream`, `click`, `type`, `key`, `drag`, `scroll`,
`move`, `wait`, `launch`, `kill` (API key); `keys`, `webhooks`, `rigs pairing-code`,
`rigs rename`, `rigs unpair` (console token); `mcp` (an MCP server for LLM clients).
The whole reference is `docs/cli.md`.

Every API command takes `--json` (one JSON document on stdout, nothing else) and
reports a failure as one line on stderr, never a traceback: `rigway: error: <code>:
<detail> (HTTP <status>, request id <id>)`, or under `--json` one JSON object
`{"error": code, "detail": …, "status": …, "request_id": …, "exit_code": …}` (the
shape is in `_output`). Exit codes:

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
10 port in use: `rigway up` found another process listening on its port
```
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Annotated, Any, NoReturn

import typer

from rigway import __version__
from rigway.cli._output import (
    EXIT_CODES_HELP,
    CliError,
    ExitCode,
    error_document,
    error_line,
    exit_code_for,
)
from rigway.cli.act_commands import register_act_commands
from rigway.cli.agent import agent_app
from rigway.cli.app_commands import register_app_commands
from rigway.cli.console_commands import keys_app, webhooks_app
from rigway.cli.mcp_command import mcp_command
from rigway.cli.release import release_app
from rigway.cli.rigs import rigs_app
from rigway.cli.screen import register_screen_commands
from rigway.cli.sessions import sessions_app
from rigway.cli.view_commands import register_view_commands
from rigway.client import RigwayError

app = typer.Typer(
    name="rigway",
    help="See and drive real desktops: local deployment, host agent, API tools.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _print_version(requested: bool) -> None:
    if requested:
        typer.echo(f"rigway {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """See and drive real desktops: local deployment, host agent, API tools."""


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


@app.command(
    "gateway",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def gateway_command(ctx: typer.Context) -> None:
    """Run one gateway node from settings until SIGTERM (`rigway gateway --help`)."""
    from rigway.cli.gateway_command import gateway

    gateway_app = typer.Typer(pretty_exceptions_enable=False, add_completion=False)
    gateway_app.command()(gateway)
    gateway_app(args=ctx.args, prog_name="rigway gateway")


app.add_typer(agent_app, name="agent")
app.add_typer(release_app, name="release")
app.add_typer(rigs_app, name="rigs")
app.add_typer(sessions_app, name="sessions")
register_screen_commands(app)
register_view_commands(app)
register_act_commands(app)
register_app_commands(app)
app.add_typer(keys_app, name="keys")
app.add_typer(webhooks_app, name="webhooks")
app.command("mcp")(mcp_command)


def _fail(message: str, exit_code: int) -> NoReturn:
    sys.stderr.write(message + "\n")
    sys.exit(exit_code)


def _fail_json(document: dict[str, Any]) -> NoReturn:
    _fail(json.dumps(document), document["exit_code"])


def wants_json(args: Sequence[str]) -> bool:
    """Whether the command line asks for `--json` (an option: before any `--`)."""
    for arg in args:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def _run_for_scripts() -> NoReturn:
    """The command under `--json`: its usage errors too become the JSON error object.

    Typer's standalone mode prints those as text, so it is off here and each way out
    is mapped: a typer.Exit comes back as its code, a bad option or argument raises a
    TyperException (exit 2).
    """
    try:
        exit_code = app(standalone_mode=False)
    except typer.Abort:
        _fail_json(CliError("interrupted", ExitCode.UNEXPECTED).document())
    except typer.TyperException as error:
        code = ExitCode.USAGE if error.exit_code == ExitCode.USAGE else ExitCode.UNEXPECTED
        _fail_json(CliError(error.format_message(), code).document())
    sys.exit(exit_code if isinstance(exit_code, int) else 0)


def main() -> None:
    """Run the `rigway` command: a failure becomes one stderr line (a JSON object under
    `--json`) and an exit code."""
    json_mode = wants_json(sys.argv[1:])
    try:
        if json_mode:
            _run_for_scripts()
        app()
    except RigwayError as error:
        if json_mode:
            _fail_json(error_document(error))
        _fail(error_line(error), exit_code_for(error))
    except CliError as error:
        if json_mode:
            _fail_json(error.document())
        _fail(f"rigway: error: {error.message}", error.exit_code)


if __name__ == "__main__":
    main()
