"""Schemathesis over every operation of the gateway's own OpenAPI schema, sent over real
HTTP to the running stack, with live sim rigs behind it.

`{session_id}` is an active session (so screenshots, input and apps really run) and
`{rig_id}` a real rig. The operations that end a session (or unpair its rig) get a
session and rig of their own and run last, so the rest is not all 410. Each operation
gets positive and negative cases: every response must be no 5xx, a declared status, a
declared content type and a body that fits its declared schema, and schema-invalid
requests must be refused with a 4xx. Cases carry the API key through the schema's
HTTPBearer scheme, so console-token operations are exercised for their 401 answer.

Schemathesis sends with `requests` (blocking), so the run goes to a worker thread while
the event loop serves the gateway and the agents.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hypothesis
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from tests.e2e.harness import QUICK_AGENT, Stack, running_stack

pytestmark = pytest.mark.postgres

if TYPE_CHECKING:
    # The Case of an OpenAPI operation; schemathesis defines the alias for type checking only.
    from schemathesis.specs.openapi.schemas import OpenApiCase

EXAMPLES_PER_OPERATION = 25
# The operations that end a session or unpair a rig (the last two take a console token,
# so the API key only gets their 401, but should that change they must not end the main
# session): they get session and rig B and run after the others.
ENDING = {
    "DELETE /v1/sessions/{session_id}",
    "POST /v1/sessions/{session_id}/end",
    "POST /v1/sessions/{session_id}/kill",
    "DELETE /v1/rigs/{rig_id}",
}
RESPONSE_CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# Schema-invalid data must be refused with a 4xx.
NEGATIVE_CHECKS = [*RESPONSE_CHECKS, negative_data_rejection]
# The API-key operations a live session serves: each must answer 2xx at least once,
# or the run proved little (say, everything 410 or 400).
REACH_2XX = [
    "GET /v1/rigs",
    "GET /v1/rigs/{rig_id}",
    "POST /v1/sessions",
    "GET /v1/sessions",
    "GET /v1/sessions/{session_id}",
    "DELETE /v1/sessions/{session_id}",
    "POST /v1/sessions/{session_id}/end",
    "GET /v1/sessions/{session_id}/screenshot",
    "GET /v1/sessions/{session_id}/dirty",
    "GET /v1/sessions/{session_id}/observe",
    "GET /v1/sessions/{session_id}/targets",
    "POST /v1/sessions/{session_id}/input",
    "POST /v1/sessions/{session_id}/app/launch",
    "POST /v1/sessions/{session_id}/app/kill",
    "POST /v1/sessions/{session_id}/wait",
]
# Keeps a generated batch fast: up to 100 events of up to 5 s each is allowed, and slow.
MAX_FUZZ_DELAY_MS = 5
# Keeps a generated wait fast: one unmet in time lasts its whole timeout (up to 30 s).
# The schema's own upper bound of an input event's expect_timeout_ms.
MAX_EXPECT_TIMEOUT_MS = 5_000
MAX_FUZZ_WAIT_MS = 100


def _without_prefix_items(node: Any) -> Any:
    """The schema with each homogeneous tuple (`prefixItems` of one repeated schema, as
    Pydantic writes `tuple[int, int, int, int]`) spelled as `items` plus a fixed length,
    which means the same. Works around schemathesis 4.32 rewriting `prefixItems` of a
    3.1 response schema into the draft-4 array form of `items` and then refusing that as
    an invalid 2020-12 schema ("Invalid Schema Object in response definition")."""
    if isinstance(node, list):
        return [_without_prefix_items(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _without_prefix_items(value) for key, value in node.items()}
    prefix = node.get("prefixItems")
    if isinstance(prefix, list) and prefix and "items" not in node:
        assert all(item == prefix[0] for item in prefix), f"heterogeneous tuple: {node}"
        del node["prefixItems"]
        node |= {"items": prefix[0], "minItems": len(prefix), "maxItems": len(prefix)}
    return node


def _stable_bit(value: object) -> bool:
    return hashlib.sha256(repr(value).encode()).digest()[0] % 2 == 0


def _tame(case: OpenApiCase, free_rig: str) -> None:
    """Keep generated cases safe and quick without changing what they test:
    - no arbitrary program runs on this machine: a launch path becomes `true` or a path
      that cannot exist (still a valid string, so a positive case stays positive);
    - input delays are capped (the batch still runs every event), and so are wait
      timeouts, an input event's expect_timeout_ms and a batch's settle (with a quiet_ms
      that then exceeds the timeout lowered to it, so a valid wait stays valid);
    - about half of the session creations name a free real rig, so 201 and 409 are
      reached, not only 404."""
    body = case.body
    label = case.operation.label
    if not isinstance(body, dict):
        return
    if label == "POST /v1/sessions/{session_id}/app/launch" and isinstance(body.get("path"), str):
        body["path"] = "true" if _stable_bit(body["path"]) else "/nonexistent/rigway-fuzz"
    elif label == "POST /v1/sessions/{session_id}/input" and isinstance(
        events := body.get("events"), list
    ):
        for event in events:
            if not isinstance(event, dict):
                continue
            delay = event.get("delay_ms")
            if type(delay) is int and delay > MAX_FUZZ_DELAY_MS:
                event["delay_ms"] = MAX_FUZZ_DELAY_MS
            expecting = event.get("expect_timeout_ms")
            if type(expecting) is int and MAX_FUZZ_WAIT_MS < expecting <= MAX_EXPECT_TIMEOUT_MS:
                event["expect_timeout_ms"] = MAX_FUZZ_WAIT_MS
        if isinstance(settle := body.get("settle"), dict):
            _tame_wait(settle, max_timeout_ms=10_000, max_quiet_ms=2_000)
    elif label == "POST /v1/sessions/{session_id}/wait":
        _tame_wait(body, max_timeout_ms=30_000, max_quiet_ms=10_000)
    elif (
        label == "POST /v1/sessions"
        and isinstance(body.get("rig_id"), str)
        and _stable_bit(body["rig_id"])
    ):
        body["rig_id"] = free_rig


def _tame_wait(body: dict[str, Any], *, max_timeout_ms: int, max_quiet_ms: int) -> None:
    # Only values the schema allows are lowered: an out-of-range one is what a negative
    # case tests, and lowering it would turn that case valid.
    timeout = body.get("timeout_ms")
    if type(timeout) is not int or not MAX_FUZZ_WAIT_MS < timeout <= max_timeout_ms:
        return
    body["timeout_ms"] = MAX_FUZZ_WAIT_MS
    quiet = body.get("quiet_ms")
    if type(quiet) is int and MAX_FUZZ_WAIT_MS < quiet <= max_quiet_ms:
        body["quiet_ms"] = MAX_FUZZ_WAIT_MS


@dataclass
class Fuzz:
    """One schemathesis pass over every operation, blocking (run it in a thread)."""

    schema: Any
    base_url: str
    ids: dict[str, dict[str, str]]
    free_rig: str
    failures: list[str] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)
    statuses: dict[str, set[int]] = field(default_factory=dict)

    def run(self) -> Fuzz:
        operations = [result.ok() for result in self.schema.get_all_operations()]
        operations.sort(key=lambda operation: operation.label in ENDING)
        with requests.Session() as http:
            for operation in operations:
                ids = self.ids["ending" if operation.label in ENDING else "main"]
                path_parameters = {
                    name: value for name, value in ids.items() if name in operation.path_parameters
                }
                for mode, checks in (
                    (GenerationMode.POSITIVE, RESPONSE_CHECKS),
                    (GenerationMode.NEGATIVE, NEGATIVE_CHECKS),
                ):
                    strategy = operation.as_strategy(
                        generation_mode=mode, path_parameters=path_parameters
                    )
                    try:
                        self._test(strategy, checks, http)()
                    except hypothesis.errors.Unsatisfiable:
                        # Nothing to make invalid (no parameters beyond the fixed ids).
                        assert mode is GenerationMode.NEGATIVE, operation.label
        return self

    def _test(self, strategy: Any, checks: list[Any], http: requests.Session) -> Any:
        @hypothesis.settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=strategy)
        def run(case: OpenApiCase) -> None:
            _tame(case, self.free_rig)
            label = case.operation.label
            self.calls[label] = self.calls.get(label, 0) + 1
            try:
                response = case.call_and_validate(
                    base_url=self.base_url, session=http, checks=checks, timeout=30
                )
            # schemathesis' FailureGroup is a BaseExceptionGroup, not an Exception.
            except (Exception, BaseExceptionGroup) as exc:
                if sum(failure.startswith(f"{label}:") for failure in self.failures) < 3:
                    self.failures.append(f"{label}: {exc}\n  {case.as_curl_command()}")
            else:
                self.statuses.setdefault(label, set()).add(response.status_code)

        return run


# Hypothesis compares the global `random` state around each draw; the event loop thread
# serving the stack moves it meanwhile (websockets draws its ping payloads from it), which
# Hypothesis mistakes for a strategy using `random`. Generation itself does not.
@pytest.mark.filterwarnings(
    "ignore:Do not use the `random` module inside strategies"
    ":hypothesis.errors.HypothesisDeprecationWarning"
)
async def test_schemathesis_every_operation_conforms_to_schema(
    tmp_path: Path, database_url: str
) -> None:
    async with running_stack(
        tmp_path / "state",
        database_url,
        rigs=3,
        reaper_interval_s=3600,
        request_rate_limit="1000000/minute",
        input_event_rate_limit="10000000/minute",
        agent_settings=QUICK_AGENT,
    ) as stack:
        main = await stack.start_session(0)
        ending = await stack.start_session(1)
        raw_schema = (await stack.client.get("/openapi.json")).json()
        config = schemathesis.Config.from_dict(
            {
                # The key goes through the schema's own HTTPBearer scheme, so negative
                # cases that drop or spoil it really go without it (and must get a 401).
                "auth": {"openapi": {"HTTPBearer": {"bearer": stack.api_key}}},
                # Unknown query parameters are ignored, as by most HTTP APIs: not a
                # violation worth failing on.
                "generation": {"allow-extra-parameters": False},
                # A refusal is any declared 4xx; 413 is the body-size limit.
                "checks": {
                    "negative_data_rejection": {
                        "expected-statuses": [400, 401, 403, 404, 409, 410, 413, 429]
                    }
                },
            }
        )
        schema = schemathesis.openapi.from_dict(_without_prefix_items(raw_schema), config=config)
        ids = {
            "main": {"session_id": main, "rig_id": stack.rig_ids[0]},
            "ending": {"session_id": ending, "rig_id": stack.rig_ids[1]},
        }
        fuzz = await asyncio.to_thread(
            Fuzz(schema, stack.base_url, ids, free_rig=stack.rig_ids[2]).run
        )
        await _assert_sessions_survived(stack, main, ending)
    assert not fuzz.failures, "\n\n".join(fuzz.failures)
    paths = raw_schema["paths"]
    assert set(fuzz.calls) == {
        f"{method.upper()} {path}" for path in paths for method in paths[path]
    }
    unreached = [
        label
        for label in REACH_2XX
        if not any(200 <= status < 300 for status in fuzz.statuses.get(label, ()))
    ]
    assert not unreached, f"no 2xx for {unreached}: {fuzz.statuses}"


async def _assert_sessions_survived(stack: Stack, main: str, ending: str) -> None:
    """The fuzzing ran against live sessions, not 410s: main is still active and the
    ending operations ended their own session."""
    main_session = (await stack.client.get(f"/v1/sessions/{main}")).json()
    assert main_session["status"] == "active", main_session
    assert main_session["action_count"] > 0, main_session
    ended = (await stack.client.get(f"/v1/sessions/{ending}")).json()
    assert ended["status"] == "ended", ended
