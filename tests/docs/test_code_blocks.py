"""The code blocks of README.md and docs/*.md run as written.

The convention, for whoever writes a page: a fenced block of a language that can run
(`bash`, `sh`, `shell`, `console`, `python`, `powershell`, `pwsh`) carries, on the last
non-blank line before its opening fence, one of two HTML comments (invisible on GitHub):

- `<!-- runs -->`: this test runs it (`bash`/`sh`/`shell` with `bash -e -o pipefail`,
  `python` with the project's `.venv/bin/python`), each block on its own against a fresh
  gateway with one sim rig (tests/e2e/harness.py's `running_stack`), in a fresh working
  directory holding `.rigway/local.json` as `rigway up` writes it and a `.venv` link to
  the project's, so `.venv/bin/rigway`, `jq … .rigway/local.json` and a bare `Rigway()`
  work there as they do in a checkout after `make up`. The address `rigway up` serves
  by default, `http://127.0.0.1:8080`, is replaced by the test gateway's. A block must
  exit 0 and leave no session active: the docs end what they start.
- `<!-- does not run: <why> -->`: the block needs what a test cannot give it (a real
  desktop, Windows, another machine, a server that runs until stopped); the reason is
  required.

A runnable-language block with neither marker fails
`test_every_runnable_language_block_is_marked`.
Blocks of other languages (`json`, `toml`, plain fences) are illustrations and are not
checked.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rigway.cli.up import LOCAL_OWNER_EMAIL, LocalCredentials
from tests.e2e.harness import Stack
from tests.support.live import active_session_ids, live_stack

REPOSITORY = Path(__file__).resolve().parents[2]
PAGES = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
RUNNABLE_LANGUAGES = frozenset({"bash", "sh", "shell", "console", "python", "powershell", "pwsh"})
SHELL_LANGUAGES = frozenset({"bash", "sh", "shell"})
RUNS_MARKER = re.compile(r"^<!--\s*runs\s*-->$")
DOES_NOT_RUN_MARKER = re.compile(r"^<!--\s*does not run:\s*(?P<reason>\S.*?)\s*-->$")
FENCE = re.compile(r"^(?P<indent> *)```(?P<language>[\w+-]*)\s*$")
ROOT_ADDRESS = "http://127.0.0.1:8080"
BLOCK_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class DocBlock:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    marker: str | None  # "runs", "does not run" or None
    reason: str | None
    text: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(REPOSITORY)}:{self.line}"


def doc_blocks(page: Path) -> list[DocBlock]:
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[DocBlock] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent = opening["indent"]
        body: list[str] = []
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            body.append(lines[end].removeprefix(indent))
            end += 1
        marker, reason = _marker_before(lines, index)
        text = "\n".join(body) + "\n"
        blocks.append(DocBlock(page, index + 1, opening["language"], marker, reason, text))
        index = end + 1
    return blocks


def _marker_before(lines: list[str], fence_index: int) -> tuple[str | None, str | None]:
    previous = fence_index - 1
    while previous >= 0 and not lines[previous].strip():
        previous -= 1
    if previous < 0:
        return None, None
    line = lines[previous].strip()
    if RUNS_MARKER.match(line):
        return "runs", None
    does_not_run = DOES_NOT_RUN_MARKER.match(line)
    if does_not_run is not None:
        return "does not run", does_not_run["reason"]
    return None, None


ALL_BLOCKS = [block for page in PAGES for block in doc_blocks(page)]
RUNNABLE_BLOCKS = [block for block in ALL_BLOCKS if block.marker == "runs"]


def test_the_parser_reads_markers_and_bodies(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- runs -->\n```bash\necho hi\n```\n\n"
        "<!-- does not run: needs Windows -->\n\n```powershell\ndir\n```\n"
        "```json\n{}\n```\n- item\n  <!-- runs -->\n  ```python\n  print(1)\n  ```\n"
    )
    blocks = doc_blocks(page)
    assert [(b.language, b.marker, b.reason, b.text) for b in blocks] == [
        ("bash", "runs", None, "echo hi\n"),
        ("powershell", "does not run", "needs Windows", "dir\n"),
        ("json", None, None, "{}\n"),
        ("python", "runs", None, "print(1)\n"),
    ]


def test_every_runnable_language_block_is_marked() -> None:
    unmarked = [
        block.name
        for block in ALL_BLOCKS
        if block.language in RUNNABLE_LANGUAGES and block.marker is None
    ]
    assert unmarked == [], "mark each with <!-- runs --> or <!-- does not run: why -->"


def test_blocks_marked_runs_are_in_a_language_this_test_runs() -> None:
    others = [
        block.name
        for block in RUNNABLE_BLOCKS
        if block.language not in SHELL_LANGUAGES and block.language != "python"
    ]
    assert others == []


def test_the_readme_has_a_runnable_block() -> None:
    assert any(block.page.name == "README.md" for block in RUNNABLE_BLOCKS)


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with live_stack(tmp_path, database_url) as running:
        yield running


@dataclass(frozen=True)
class BlockRun:
    cwd: Path
    stdout: str
    stderr: str


async def run_block(block: DocBlock, stack: Stack, tmp_path: Path) -> BlockRun:
    """Run `block` in a new working directory set up as a checkout after `make up`."""
    cwd = tmp_path / "newcomer"
    home = tmp_path / "home"
    home.mkdir()
    cwd.mkdir()
    (cwd / ".venv").symlink_to(REPOSITORY / ".venv")
    LocalCredentials(
        base_url=stack.base_url,
        signaling_url=stack.base_url.replace("http", "ws", 1) + "/v1/stream/signal",
        api_key=stack.api_key,
        console_token=None,
        rig_ids=stack.rig_ids,
        console_url=f"{stack.base_url}/console",
        console_email=LOCAL_OWNER_EMAIL,
        console_password=None,
    ).write(cwd / ".rigway" / "local.json")
    text = block.text.replace(ROOT_ADDRESS, stack.base_url)
    env = {name: value for name, value in os.environ.items() if not name.startswith("RIGWAY_")}
    env |= {"HOME": str(home)}
    if block.language == "python":
        script = cwd / "doc_block.py"
        script.write_text(text, encoding="utf-8")
        command = [str(REPOSITORY / ".venv" / "bin" / "python"), str(script)]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", text]
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(BLOCK_TIMEOUT_S):
        stdout, stderr = await process.communicate()
    run = BlockRun(cwd, stdout.decode(errors="replace"), stderr.decode(errors="replace"))
    assert process.returncode == 0, f"{block.name} failed:\n{run.stdout}\n{run.stderr}"
    return run


@pytest.mark.skipif(sys.platform == "win32", reason="the blocks are bash and POSIX paths")
@pytest.mark.parametrize("block", RUNNABLE_BLOCKS, ids=[block.name for block in RUNNABLE_BLOCKS])
async def test_block_runs_and_ends_its_sessions(
    block: DocBlock, stack: Stack, tmp_path: Path
) -> None:
    await run_block(block, stack, tmp_path)

    assert await active_session_ids(stack) == []


@pytest.mark.skipif(sys.platform == "win32", reason="the blocks are bash and POSIX paths")
async def test_readme_loop_saves_a_screenshot_and_ticks_remember_me(
    stack: Stack, tmp_path: Path
) -> None:
    loop = next(
        block
        for block in RUNNABLE_BLOCKS
        if block.page.name == "README.md" and "/screenshot" in block.text
    )
    assert stack.sim().checkbox_checked is False

    run = await run_block(loop, stack, tmp_path)

    assert (run.cwd / "shot.jpg").read_bytes()[:3] == b"\xff\xd8\xff"  # a JPEG
    assert stack.sim().checkbox_checked is True
    assert '"status": "ended"' in run.stdout
    assert await active_session_ids(stack) == []
