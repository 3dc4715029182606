"""Remembered routes to the node serving a session: per account, for a few seconds."""

from __future__ import annotations

from rigway.gateway.clock import FakeClock
from rigway.gateway.cluster.holder_routes import ROUTE_TTL_S, HolderRoutes

HOLDER = "http://10.0.0.2:8080"


def test_a_route_serves_the_account_it_was_learnt_for() -> None:
    routes = HolderRoutes(FakeClock())
    routes.remember("ses_1", "acc_a", "rig_1", HOLDER)

    route = routes.get("ses_1", "acc_a")

    assert route is not None
    assert (route.rig_id, route.holder_url) == ("rig_1", HOLDER)
    assert routes.get("ses_1", "acc_b") is None
    assert routes.get("ses_2", "acc_a") is None


def test_a_route_expires_and_can_be_forgotten() -> None:
    clock = FakeClock()
    routes = HolderRoutes(clock)
    routes.remember("ses_1", "acc_a", "rig_1", HOLDER)
    routes.remember("ses_2", "acc_a", "rig_2", HOLDER)

    clock.advance(ROUTE_TTL_S - 0.1)
    assert routes.get("ses_1", "acc_a") is not None
    routes.forget("ses_1")
    assert routes.get("ses_1", "acc_a") is None
    clock.advance(0.1)
    assert routes.get("ses_2", "acc_a") is None
    assert len(routes) == 0


def test_the_routes_stay_bounded() -> None:
    clock = FakeClock()
    routes = HolderRoutes(clock)
    for index in range(5000):
        routes.remember(f"ses_{index}", "acc_a", "rig_1", HOLDER)
        if index == 3000:
            clock.advance(ROUTE_TTL_S)  # the first 3001 expire

    assert len(routes) <= 4096
    assert routes.get("ses_4999", "acc_a") is not None
