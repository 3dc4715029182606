"""docs/sdk.md's quickstart runs unchanged after `make up`: with no arguments, from a
working directory that holds `.rigway/local.json` as `rigway up` writes it, against a
live gateway and sim rig; and it stays five lines."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.docs.test_code_blocks import REPOSITORY, DocBlock, doc_blocks, run_block
from tests.e2e.harness import Stack
from tests.support.live import active_session_ids, live_stack

SDK_PAGE = REPOSITORY / "docs" / "sdk.md"


def quickstart() -> DocBlock:
    """The first Python block of docs/sdk.md, which must be marked to run."""
    block = next(block for block in doc_blocks(SDK_PAGE) if block.language == "python")
    assert block.marker == "runs", f"{block.name} is the quickstart: mark it <!-- runs -->"
    return block


def test_the_quickstart_is_an_import_and_five_lines_without_arguments() -> None:
    lines = [line for line in quickstart().text.splitlines() if line.strip()]
    assert lines[0] == "from rigway.client import Rigway"
    assert len(lines[1:]) == 5, lines
    assert "Rigway()" in lines[1]
    assert "sessions.create()" in lines[1]


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with live_stack(tmp_path, database_url) as running:
        yield running


@pytest.mark.skipif(sys.platform == "win32", reason="the runner links a POSIX .venv")
async def test_the_quickstart_types_into_the_rig_and_saves_a_screenshot(
    stack: Stack, tmp_path: Path
) -> None:
    run = await run_block(quickstart(), stack, tmp_path)

    assert "window" in run.stdout  # observe's summary: `window 'Sign in': …`
    assert stack.sim().field_text("username") == "ada"
    assert (run.cwd / "shot.jpg").read_bytes()[:3] == b"\xff\xd8\xff"  # a JPEG
    assert await active_session_ids(stack) == []
