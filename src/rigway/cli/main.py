"""Entry point of the `rigway` command."""

from __future__ import annotations

import typer

from rigway.cli.agent import agent_app
from rigway.cli.release import release_app
from rigway.cli.up import up

app = typer.Typer(
    name="rigway",
    help="See and drive real desktops: local deployment, host agent, API tools.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.command("up")(up)
app.add_typer(agent_app, name="agent")
app.add_typer(release_app, name="release")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
