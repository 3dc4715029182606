"""A client generated from the committed `docs/openapi.json` by openapi-python-client
works against a running stack: it starts a session, reads a screenshot (a JPEG, with its
frame id) and ends the session. The document's declarations are what such a client is
built from, so a body or status it leaves undeclared shows here as a missing answer."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.e2e.harness import running_stack

OPENAPI = Path(__file__).parents[2] / "docs" / "openapi.json"
# In a venv of its own beside the project's (`make setup`): it pins typer below its
# current release.
GENERATOR = (
    Path(sys.executable).parents[1] / "tools" / "openapi-client" / "bin" / "openapi-python-client"
)
PACKAGE = "rigway_generated_client"
# openapi-python-client reads only JSON bodies unless told to take others as bytes; and
# no post-hooks, so generating needs no formatter on PATH.
CONFIG = """\
content_type_overrides:
  image/jpeg: application/octet-stream
  application/zip: application/octet-stream
post_hooks: []
"""


@pytest.fixture
def generated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    config = tmp_path / "config.yml"
    config.write_text(CONFIG)
    subprocess.run(
        [
            str(GENERATOR),
            "generate",
            "--path",
            str(OPENAPI),
            "--meta",
            "none",
            "--output-path",
            str(tmp_path / PACKAGE),
            "--config",
            str(config),
            "--fail-on-warning",
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module(PACKAGE)
    for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
        del sys.modules[name]


async def test_generated_client_starts_reads_and_ends_a_session(
    tmp_path: Path, database_url: str, generated: ModuleType
) -> None:
    create_session = importlib.import_module(f"{PACKAGE}.api.sessions.create_session")
    delete_session = importlib.import_module(f"{PACKAGE}.api.sessions.delete_session")
    screenshot = importlib.import_module(f"{PACKAGE}.api.desktop.screenshot")
    models = importlib.import_module(f"{PACKAGE}.models")

    async with running_stack(tmp_path / "state", database_url, reaper_interval_s=3600) as stack:
        client = generated.AuthenticatedClient(
            base_url=stack.base_url, token=stack.api_key, httpx_args={"trust_env": False}
        )
        async with client:
            started = await create_session.asyncio_detailed(
                client=client, body=models.CreateSessionIn(rig_id=stack.rig_ids[0])
            )
            assert started.status_code == 201
            session = started.parsed
            assert isinstance(session, models.SessionOut)
            assert session.status == models.SessionOutStatus.ACTIVE

            shot = await screenshot.asyncio_detailed(session.session_id, client=client)
            assert shot.status_code == 200
            # Declared as `{}`, the 200 parses to None: the client drops the image.
            assert isinstance(shot.parsed, generated.types.File)
            jpeg = shot.parsed.payload.read()
            assert jpeg.startswith(b"\xff\xd8\xff")
            assert jpeg.endswith(b"\xff\xd9")
            assert shot.headers["x-frame-id"]

            ended = await delete_session.asyncio(session.session_id, client=client)
            assert isinstance(ended, models.SessionOut)
            assert ended.status == models.SessionOutStatus.ENDED
            assert ended.ended_reason == models.SessionOutEndedReasonType0.CLIENT
