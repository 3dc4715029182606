"""Health and metrics on a live stack: liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import socket

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.harness import Stack

pytestmark = pytest.mark.postgres

NODE = socket.gethostname()


def _samples(exposition: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Each sample named `name`: its labels (sorted pairs) → its value."""
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == name
    }


def _gauge(exposition: str, name: str) -> float:
    samples = _samples(exposition, name)
    assert list(samples) == [(("node", NODE),)], exposition
    return samples[(("node", NODE),)]


async def test_health_and_readiness_answer_ok(stack: Stack) -> None:
    assert (await stack.client.get("/healthz")).json() == {"ok": True}
    assert (await stack.client.get("/readyz")).json() == {"ok": True}


async def test_metrics_count_the_connected_host_and_the_active_session(stack: Stack) -> None:
    before = await stack.client.get("/metrics")
    assert before.status_code == 200
    assert before.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "# TYPE rigway_active_sessions gauge" in before.text
    assert _gauge(before.text, "rigway_connected_hosts") == 1
    assert _gauge(before.text, "rigway_active_sessions") == 0

    session_id = await stack.start_session()
    assert _gauge((await stack.client.get("/metrics")).text, "rigway_active_sessions") == 1

    await stack.client.delete(f"/v1/sessions/{session_id}")
    assert _gauge((await stack.client.get("/metrics")).text, "rigway_active_sessions") == 0


async def test_metrics_time_routes_by_template_and_host_ops_by_op(stack: Stack) -> None:
    session_id = await stack.start_session()
    for _ in range(3):
        assert (await stack.client.get(f"/v1/sessions/{session_id}/screenshot")).status_code == 200
    await stack.client.delete(f"/v1/sessions/{session_id}")

    exposition = (await stack.client.get("/metrics")).text

    requests = _samples(exposition, "rigway_http_request_seconds_count")
    screenshot_route = (
        ("method", "GET"), ("node", NODE),
        ("route", "/v1/sessions/{session_id}/screenshot"), ("status", "2xx"),
    )  # fmt: skip
    assert requests[screenshot_route] == 3
    host_ops = _samples(exposition, "rigway_host_op_seconds_count")
    assert host_ops[(("node", NODE), ("op", "screen/capture"), ("outcome", "ok"))] >= 1
    assert host_ops[(("node", NODE), ("op", "session/start"), ("outcome", "ok"))] == 1
    ended = _samples(exposition, "rigway_sessions_ended_total")
    assert ended == {(("node", NODE), ("reason", "client")): 1}


async def test_metrics_count_errors_by_code_and_unmatched_paths_as_one_route(
    stack: Stack,
) -> None:
    for path in ("/v1/sessions/ses_missing", "/no/such/path/1", "/no/such/path/2"):
        assert (await stack.client.get(path)).status_code == 404

    exposition = (await stack.client.get("/metrics")).text

    errors = _samples(exposition, "rigway_http_errors_total")
    assert errors[(("code", "session_not_found"), ("node", NODE), ("status", "404"))] == 1
    assert errors[(("code", "not_found"), ("node", NODE), ("status", "404"))] == 2
    routes = {
        dict(labels)["route"]
        for labels in _samples(exposition, "rigway_http_request_seconds_count")
    }
    assert "unmatched" in routes
    assert not any(route.startswith("/no/such") for route in routes)
