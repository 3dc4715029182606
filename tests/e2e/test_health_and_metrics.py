"""Health and metrics on a live stack: liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import pytest

from tests.e2e.harness import Stack

pytestmark = pytest.mark.postgres


def _gauge(exposition: str, name: str) -> float:
    values = [
        float(line.split()[1])
        for line in exposition.splitlines()
        if line.startswith(f"{name} ") and not line.startswith("#")
    ]
    assert len(values) == 1, exposition
    return values[0]


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
