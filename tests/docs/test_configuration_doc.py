"""docs/configuration.md is what the settings model says, and names every setting."""

from __future__ import annotations

import re
from pathlib import Path

from rigway.gateway import settings
from rigway.gateway.configuration_doc import DOC_PATH, main, render
from rigway.gateway.settings import ENVIRONMENT_VARIABLES, GatewaySettings


def test_committed_page_matches_the_settings_model() -> None:
    assert DOC_PATH.read_text(encoding="utf-8") == render(), (
        "docs/configuration.md drifted from GatewaySettings: "
        "run .venv/bin/python -m rigway.gateway.configuration_doc"
    )


def test_check_mode_passes_on_the_committed_page() -> None:
    assert main(["--check"]) == 0


def test_every_setting_has_a_row_with_its_default() -> None:
    page = render()
    for name in GatewaySettings.model_fields:
        assert re.search(rf"^\| `{name}` \|", page, re.MULTILINE), name
    assert "| `max_concurrent_sessions` | `RIGWAY_MAX_CONCURRENT_SESSIONS` | `5` |" in page
    assert "| `trusted_proxies` | `RIGWAY_TRUSTED_PROXIES` | none |" in page


def test_every_environment_variable_is_listed_against_a_real_setting() -> None:
    page = render()
    for env_name, field_name in ENVIRONMENT_VARIABLES.items():
        assert field_name in GatewaySettings.model_fields, env_name
        assert f"| `{field_name}` | `{env_name}` |" in page


def test_every_rigway_variable_the_settings_module_reads_is_documented() -> None:
    source = Path(settings.__file__).read_text(encoding="utf-8")
    read = set(re.findall(r'"(RIGWAY_[A-Z_]+)"', source))
    assert "RIGWAY_CONFIG" in read
    page = render()
    assert {name for name in read if f"`{name}`" not in page} == set()
