"""The OpenAPI document's own words: its description and one per tag, in the words of
`docs/api.md` (which carries the whole contract)."""

from __future__ import annotations

from typing import Any

__all__ = ["API_DESCRIPTION", "OPENAPI_TAGS"]

API_DESCRIPTION = """\
JPEG screenshots, dirty rectangles, one-call observe (image, changed flag,
accessibility click targets, text), input batches, app launch and kill, metered
sessions. The whole contract, in prose: `docs/api.md`.

**Authentication.** `Authorization: Bearer rgw_(live|test)_sk_<48 hex>` (an API key)
on every key-protected operation; the console operations take a console token instead.
A key lacking an operation's scope gets `403 insufficient_scope`.

**Errors.** Body `{"error": "<code>"}` or `{"error": "<code>: <detail>"}`: split on the
first `": "`. Every response carries `X-Request-Id`. Do not retry `401
invalid_api_key`, `403 api_access_disabled` or `410 session_ended`; retry a `429` after
its `Retry-After`.

The first loop: `POST /v1/sessions` with a rig id, `GET
/v1/sessions/{session_id}/screenshot`, `POST /v1/sessions/{session_id}/input`, then
`DELETE /v1/sessions/{session_id}` (a session is billed until it ends).
"""

OPENAPI_TAGS: list[dict[str, Any]] = [
    {"name": "sessions", "description": "Start, read and end metered sessions on a rig."},
    {
        "name": "desktop",
        "description": (
            "A session's desktop: screenshots, dirty rectangles, observe, click targets, "
            "waits, input batches, apps."
        ),
    },
    {"name": "rigs", "description": "The account's rigs, and waking one."},
    {"name": "stream", "description": "Credentials for a session's live WebRTC view."},
    {
        "name": "host agent",
        "description": "What a host agent calls: pairing, and its signed releases.",
    },
    {"name": "console: sign-in", "description": "Console tokens, and the keys that sign them."},
    {"name": "console: keys", "description": "API keys (console token)."},
    {"name": "console: webhooks", "description": "Webhooks for session events (console token)."},
    {"name": "console: rigs", "description": "A rig owner's operations (console token)."},
    {"name": "health and metrics", "description": "Liveness, readiness, Prometheus metrics."},
]


def restore_example_nulls(document: dict[str, Any]) -> None:
    """Put back the nulls FastAPI drops from examples.

    FastAPI encodes the document with `exclude_none`, which also strips every null out
    of the examples, so an example session would lack its required `ended_at`. A
    required, nullable field missing from an example can only have been such a null."""
    components = document.get("components", {}).get("schemas", {})
    for component in components.values():
        for example in component.get("examples", []):
            _restore(example, component, components)
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            bodies = [operation.get("requestBody", {}), *operation.get("responses", {}).values()]
            for media in (m for body in bodies for m in body.get("content", {}).values()):
                shape = media.get("schema", {})
                for named in media.get("examples", {}).values():
                    _restore(named.get("value"), shape, components)
                if "example" in media:
                    _restore(media["example"], shape, components)


def _restore(value: Any, shape: dict[str, Any], components: dict[str, Any]) -> None:
    reference = shape.get("$ref")
    if reference is not None:
        shape = components.get(str(reference).rsplit("/", 1)[-1], {})
    for alternative in shape.get("anyOf", []):
        if alternative.get("type") != "null":
            _restore(value, alternative, components)
    if isinstance(value, list):
        for item in value:
            _restore(item, shape.get("items", {}), components)
    if not isinstance(value, dict):
        return
    for name, field in shape.get("properties", {}).items():
        if name in value:
            _restore(value[name], field, components)
        elif name in shape.get("required", []) and _is_nullable(field):
            value[name] = None


def _is_nullable(field: dict[str, Any]) -> bool:
    return field.get("type") == "null" or any(
        alternative.get("type") == "null" for alternative in field.get("anyOf", [])
    )
