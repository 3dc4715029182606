"""The OpenAPI document: the committed `docs/openapi.json` is the live schema, and the
schema meets its bar (every operation summarised, described, tagged and exemplified,
every query and path parameter and ≥ 95 % of schema fields described, the screenshot's body and
headers declared, error bodies with examples)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rigway.gateway.openapi_dump import openapi_document, openapi_text

COMMITTED = Path(__file__).parents[2] / "docs" / "openapi.json"
REGENERATE = "python -m rigway.gateway.openapi_dump > docs/openapi.json"
BINARY = {"type": "string", "format": "binary"}
Operation = tuple[str, dict[str, Any]]


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return openapi_document()


def _operations(schema: dict[str, Any]) -> list[Operation]:
    return [
        (f"{method.upper()} {path}", operation)
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
    ]


def _resolved(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    reference = node.get("$ref")
    if reference is None:
        return node
    found: dict[str, Any] = schema
    for part in reference.removeprefix("#/").split("/"):
        found = found[part]
    return found


def _has_example(schema: dict[str, Any], media: dict[str, Any]) -> bool:
    if "example" in media or "examples" in media:
        return True
    if media.get("schema") == BINARY:
        return True  # bytes (a JPEG, a wheel): the declared binary body is the example
    body = media.get("schema", {})
    # An optional body (`AppKillIn | None`) is anyOf its model and null.
    alternatives = body.get("anyOf", [body])
    return any("examples" in _resolved(schema, alternative) for alternative in alternatives)


def test_committed_openapi_json_is_the_live_schema() -> None:
    assert COMMITTED.read_text() == openapi_text(), f"regenerate it: {REGENERATE}"


def test_every_operation_has_a_summary_description_and_tag(schema: dict[str, Any]) -> None:
    lacking = [
        label
        for label, operation in _operations(schema)
        if not (operation.get("summary") and operation.get("description") and operation["tags"])
    ]
    assert lacking == []


def test_every_operation_has_request_and_response_examples(schema: dict[str, Any]) -> None:
    lacking = []
    for label, operation in _operations(schema):
        body = operation.get("requestBody", {}).get("content", {})
        if not all(_has_example(schema, media) for media in body.values()):
            lacking.append(f"{label} request")
        successes = [
            response
            for status, response in operation["responses"].items()
            if status.startswith("2")
        ]
        for response in successes:
            if not all(_has_example(schema, m) for m in response.get("content", {}).values()):
                lacking.append(f"{label} response")
    assert lacking == []


def test_every_error_response_has_example_bodies(schema: dict[str, Any]) -> None:
    lacking = [
        f"{label} {status}"
        for label, operation in _operations(schema)
        for status, response in operation["responses"].items()
        if status[0] in "45"
        and not all(_has_example(schema, m) for m in response.get("content", {}).values())
    ]
    assert lacking == []


def test_every_query_and_path_parameter_is_described(schema: dict[str, Any]) -> None:
    undescribed = [
        f"{label} {parameter['name']}"
        for label, operation in _operations(schema)
        for parameter in operation.get("parameters", [])
        if not parameter.get("description")
    ]
    assert undescribed == []


def test_at_least_95_percent_of_schema_fields_are_described(schema: dict[str, Any]) -> None:
    fields = [
        (name, field)
        for name, component in schema["components"]["schemas"].items()
        for field in component.get("properties", {}).values()
    ]
    undescribed = [name for name, field in fields if not field.get("description")]
    assert len(undescribed) <= 0.05 * len(fields), undescribed


def test_screenshot_declares_its_jpeg_body_and_headers(schema: dict[str, Any]) -> None:
    ok = schema["paths"]["/v1/sessions/{session_id}/screenshot"]["get"]["responses"]["200"]
    assert ok["content"] == {"image/jpeg": {"schema": BINARY}}
    assert set(ok["headers"]) == {
        "X-Frame-Id",
        "X-Screenshot-Width",
        "X-Screenshot-Height",
        "X-Screenshot-Native-Width",
        "X-Screenshot-Native-Height",
        "Server-Timing",
    }


def test_rate_limited_answers_declare_their_headers(schema: dict[str, Any]) -> None:
    limited = [
        operation["responses"]["429"]
        for _label, operation in _operations(schema)
        if "429" in operation["responses"]
    ]
    assert limited
    for response in limited:
        assert {"Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} <= set(
            response["headers"]
        )


def test_every_tag_in_use_is_declared_with_a_description(schema: dict[str, Any]) -> None:
    declared = {tag["name"]: tag.get("description") for tag in schema["tags"]}
    used = {tag for _label, operation in _operations(schema) for tag in operation["tags"]}
    assert used == set(declared)
    assert all(declared.values())
