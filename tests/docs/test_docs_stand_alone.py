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
from tests.e2e.harness import Stack, ok_json
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


async def test_an_app_mode_session_sees_nothing_of_the_desktop_before_its_app_has_a_window(
    stack: Stack,
) -> None:
    # docs/api.md (Sessions scoped to an app): the owner's desktop stays private.
    session_id = await stack.start_session(mode="app")
    session = ok_json(await stack.client.get(f"/v1/sessions/{session_id}"))
    shot = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
    targets = await stack.client.get(f"/v1/sessions/{session_id}/targets")
    click = {"events": [{"type": "mouse_click", "x": 10, "y": 10}]}
    clicked = await stack.client.post(f"/v1/sessions/{session_id}/input", json=click)

    assert session["mode"] == "app"
    assert session["app_window"] is None
    for refused in (shot, targets, clicked):
        assert refused.status_code == 409
        assert refused.json()["error"].startswith("no_app_window: ")
    assert stack.sim().pointer == (0, 0)
    ended = ok_json(await stack.client.delete(f"/v1/sessions/{session_id}"))
    assert ended["mode"] == "app"
