"""The OpenAPI document: the committed `docs/openapi.json` is the live schema, and the
schema meets its bar (every operation summarised, described, tagged and exemplified,
every query and path parameter and ≥ 95 % of schema fields described, the screenshot's body and
headers declared, error bodies with examples)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

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
        "X-App-Window",
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


def _models_by_name() -> dict[str, list[type[BaseModel]]]:
    found: dict[str, list[type[BaseModel]]] = {}
    pending: list[type[BaseModel]] = [BaseModel]
    while pending:
        for model in pending.pop().__subclasses__():
            if model.__module__.startswith("rigway."):
                found.setdefault(model.__name__, []).append(model)
            pending.append(model)
    return found


def _component_name(shape: dict[str, Any]) -> str | None:
    for alternative in shape.get("anyOf", [shape]):
        reference = alternative.get("$ref")
        if reference is not None:
            return str(reference).rsplit("/", 1)[-1]
    return None


def _examples(schema: dict[str, Any]) -> list[tuple[str, str | None, Any]]:
    """Every example of the document, beside the component it illustrates (None for
    the bodies no model describes: the JWKS, readiness, metrics, a .sha256)."""
    found: list[tuple[str, str | None, Any]] = [
        (f"component {name}", name, example)
        for name, component in schema["components"]["schemas"].items()
        for example in component.get("examples", [])
    ]
    for label, operation in _operations(schema):
        bodies = [("request", operation.get("requestBody", {}))]
        bodies += list(operation["responses"].items())
        for where, body in bodies:
            for media in body.get("content", {}).values():
                examples = [e["value"] for e in media.get("examples", {}).values()]
                examples += [media["example"]] if "example" in media else []
                name = _component_name(media.get("schema", {}))
                found += [(f"{label} {where}", name, example) for example in examples]
    return found


def test_every_example_is_valid_for_its_model(schema: dict[str, Any]) -> None:
    """An example a client copies must be one the gateway accepts or gives: each is
    read by its model as the gateway reads JSON (strictly, for requests)."""
    models = _models_by_name()
    misfits = []
    for where, name, example in _examples(schema):
        if name is None:
            continue
        [model] = [m for m in models[name] if m.model_json_schema()["title"] == name][:1]
        try:
            model.model_validate_json(json.dumps(example))
        except ValidationError as error:
            misfits.append(f"{where} ({name}): {error}")
    assert misfits == []


def test_rig_busy_declares_the_session_holding_the_rig(schema: dict[str, Any]) -> None:
    conflict = schema["paths"]["/v1/sessions"]["post"]["responses"]["409"]["content"]
    name = _component_name(conflict["application/json"]["schema"])
    assert name is not None
    assert "active_session_id" in schema["components"]["schemas"][name]["properties"]
    assert "active_session_id" in conflict["application/json"]["examples"]["rig_busy"]["value"]
