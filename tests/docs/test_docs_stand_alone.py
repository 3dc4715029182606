"""README.md and docs/*.md stand alone: they cite only files in the repository, and what
docs/api.md says of key names and of a session's `mode` holds."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rigway.protocol.keys import (
    CHARACTER_KEYS,
    KEY_ALIASES,  # the table the gateway checks
    NAMED_KEYS,
    canonical_key,
)
from tests.e2e.harness import Stack, batch_ran, ok_json
from tests.support.live import live_stack

REPOSITORY = Path(__file__).resolve().parents[2]
PAGES = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
# A path in the repository's own folders, as the pages write them: `docs/api.md`.
REPOSITORY_PATH = re.compile(
    r"(?<![\w/.-])((?:docs|src|tests|bench|scripts|examples|spec)/[\w./-]*\w)"
)
# Notes kept beside the repository, never in it: a page that names one sends the
# reader somewhere they cannot follow.
OUTSIDE_NOTES = ("API-DECISIONS", "TECH-NOTES", "FEASIBILITY", "SCALE-OUT-NOTES", "WINDOWS-NOTES")
API_PAGE = REPOSITORY / "docs" / "api.md"


def key_names_section() -> str:
    text = API_PAGE.read_text(encoding="utf-8")
    start = text.index("**Key names**")
    return text[start : text.index("\n\n", start)]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPOSITORY)) for p in PAGES])
def test_page_cites_only_files_in_the_repository(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    missing = [path for path in REPOSITORY_PATH.findall(text) if not (REPOSITORY / path).exists()]
    assert missing == []
    assert [note for note in OUTSIDE_NOTES if note in text] == []


def test_api_page_lists_every_named_key() -> None:
    section = key_names_section()
    assert "`f1` … `f24`" in section
    listed = {name for name in NAMED_KEYS if not re.fullmatch(r"f\d+", name)}
    assert {name for name in listed if f"`{name}`" not in section} == set()


def test_api_page_lists_every_alias() -> None:
    section = key_names_section()
    assert {alias for alias in KEY_ALIASES if f"`{alias}`" not in section} == set()


def test_api_page_lists_the_punctuation_the_gateway_takes() -> None:
    punctuation = "".join(sorted(c for c in CHARACTER_KEYS if not c.isalnum()))
    written = re.search(r"`` (\S+) ``", key_names_section())
    assert written is not None
    assert "".join(sorted(written[1])) == punctuation
    assert canonical_key("A") == "a"  # the page says an upper-case letter is its key


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with live_stack(tmp_path, database_url) as running:
        yield running


async def test_an_app_mode_session_sees_and_drives_the_whole_desktop(stack: Stack) -> None:
    # docs/api.md (Sessions): `app` behaves as `desktop` today.
    session_id = await stack.start_session(mode="app")
    session = ok_json(await stack.client.get(f"/v1/sessions/{session_id}"))
    shot = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
    targets = ok_json(await stack.client.get(f"/v1/sessions/{session_id}/targets"))
    remember = next(t for t in targets["targets"] if t["name"] == "Remember me")
    click = {"events": [{"type": "mouse_click", "target": remember["id"]}]}

    ran = batch_ran(await stack.client.post(f"/v1/sessions/{session_id}/input", json=click))

    assert session["mode"] == "app"
    assert shot.headers["X-Screenshot-Width"] == str(session["native_width"])
    assert ran == 1
    assert stack.sim().checkbox_checked is True
    ended = ok_json(await stack.client.delete(f"/v1/sessions/{session_id}"))
    assert ended["mode"] == "app"
