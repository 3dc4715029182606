"""What the acting commands share: the `--settle` option and how an input answer
(receipts, settle) is printed."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from rigway.client import ActResult

__all__ = ["SettleOption", "act_report"]

SettleOption = Annotated[
    bool,
    typer.Option(
        "--settle/--no-settle",
        help="Answer once the screen has been still for 100 ms (at most 2 s).",
    ),
]


def act_report(result: ActResult, **extra: Any) -> dict[str, Any]:
    """The input answer as the API gave it (receipts included; `settle` only when asked
    for), with the command's own facts (`extra`) beside it."""
    report = result.model_dump(mode="json")
    for absent in ("settle", "observe"):
        if report.get(absent) is None:
            report.pop(absent, None)
    return report | extra
