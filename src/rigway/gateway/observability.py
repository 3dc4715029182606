"""What an operator measures: latency histograms kept as requests and host operations
happen, and counts (errors by code, sessions ended by reason, webhook outcomes) that
their owners keep and the scrape reads. Every series carries a `node` label, so the
nodes of one service can be told apart on one dashboard.

One registry per app (never prometheus_client's global one): each app, and each test's
app, reports only its own.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from rigway.gateway.services import Services

# Seconds: from a cached screenshot (about a millisecond) to a slow observe or batch.
LATENCY_BUCKETS_S = (
    0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip
# The route of a request that matched none (a 404 for an unknown path): one series for
# all of them, never the raw path, which a client could vary without bound.
UNMATCHED_ROUTE = "unmatched"


class GatewayMetrics:
    def __init__(self, node: str) -> None:
        self.node = node
        self.registry = CollectorRegistry(auto_describe=False)
        self.request_seconds = Histogram(
            "rigway_http_request_seconds",
            "HTTP requests by route template, method and status class, until the"
            " response's last byte.",
            ["node", "method", "route", "status"],
            buckets=LATENCY_BUCKETS_S,
            registry=self.registry,
        )
        self.host_op_seconds = Histogram(
            "rigway_host_op_seconds",
            "Operations sent to host agents, by op and outcome (ok, error, timeout,"
            " unavailable), until the reply.",
            ["node", "op", "outcome"],
            buckets=LATENCY_BUCKETS_S,
            registry=self.registry,
        )
        self.forward_seconds = Histogram(
            "rigway_forward_seconds",
            "Requests forwarded to the node holding their rig, by outcome (ok,"
            " not_held_here, unavailable, timeout), until its answer.",
            ["node", "outcome"],
            buckets=LATENCY_BUCKETS_S,
            registry=self.registry,
        )
        # Kept here, counted by the error handler.
        self.errors_by_code: Counter[tuple[int, str]] = Counter()

    def observe_host_op(self, op: str, seconds: float, outcome: str) -> None:
        self.host_op_seconds.labels(self.node, op, outcome).observe(seconds)

    def observe_forward(self, seconds: float, outcome: str) -> None:
        self.forward_seconds.labels(self.node, outcome).observe(seconds)

    def count_error(self, status: int, code: str) -> None:
        self.errors_by_code[(status, code)] += 1

    def add_counts(self, collect: Callable[[str], Iterator[Metric]]) -> None:
        """Series read at scrape time from their owners' state: `collect(node)`."""
        self.registry.register(_ScrapeTime(collect, self.node))

    def error_counts(self, node: str) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "rigway_http_errors",
            "Error responses by status and error code.",
            labels=["node", "status", "code"],
        )
        for (status, code), count in sorted(self.errors_by_code.items()):
            family.add_metric([node, str(status), code], count)
        yield family


def counts_family(
    name: str, documentation: str, label: str, counts: Counter[str], node: str
) -> CounterMetricFamily:
    family = CounterMetricFamily(name, documentation, labels=["node", label])
    for value, count in sorted(counts.items()):
        family.add_metric([node, value], count)
    return family


class _ScrapeTime:
    def __init__(self, collect: Callable[[str], Iterator[Metric]], node: str) -> None:
        self._collect = collect
        self._node = node

    def collect(self) -> Iterator[Metric]:
        yield from self._collect(self._node)


class RequestMetricsMiddleware:
    """ASGI middleware timing each HTTP request into `rigway_http_request_seconds`,
    labelled with the route's template (`/v1/sessions/{session_id}/screenshot`)."""

    def __init__(self, app: ASGIApp, metrics: GatewayMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            # FastAPI's router records the route it matched in the request's scope.
            route = getattr(scope.get("route"), "path", UNMATCHED_ROUTE)
            self.metrics.request_seconds.labels(
                self.metrics.node, scope["method"], route, f"{status // 100}xx"
            ).observe(time.perf_counter() - started)


def add_scrape_time_counts(metrics: GatewayMetrics, services: Services) -> None:
    """The series read at scrape time from the services' state."""

    def counts(node: str) -> Iterator[Metric]:
        for name, documentation, value in (
            ("rigway_active_sessions", "Active sessions served by this gateway.",
             len(services.sessions.live.all())),
            ("rigway_connected_hosts", "Host agents connected to this gateway.",
             services.registry.connected_count()),
            ("rigway_requests_in_flight", "HTTP requests this gateway is serving now.",
             services.requests_in_flight.count),
        ):  # fmt: skip
            gauge = GaugeMetricFamily(name, documentation, labels=["node"])
            gauge.add_metric([node], value)
            yield gauge
        yield counts_family(
            "rigway_sessions_ended",
            "Sessions this gateway ended, by reason.",
            "reason",
            services.sessions.ended_by_reason,
            node,
        )
        yield counts_family(
            "rigway_webhook_deliveries",
            "Webhook deliveries by outcome: delivered (2xx), refused, failed.",
            "outcome",
            services.webhook_dispatcher.outcomes,
            node,
        )
        yield from metrics.error_counts(node)

    metrics.add_counts(counts)
