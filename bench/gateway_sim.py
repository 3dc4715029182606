"""Screenshot (q85) and observe image=0 through the gateway on the
sim desktop at 1920x1080, beside the agent's own capture+encode time.

It also times the same cached screenshot twice: back to back, and after 5 ms of idle
(about one encode's length). On a VM whose idle vCPUs halt, each of the chain's six
hops (client, gateway, agent loop, screen worker and back) then pays a wake-up; the
difference is the part of the changed-screen overhead that no code path on this side
of the hypervisor removes.

The run also times, in this process and between the gateway rounds, a sim grab plus
an encode of the same desktop: the floor any chain starts from, measured beside the
chain, so a slower or faster phase of the VM moves both alike.

A changed screen is timed twice. After a click, the agent re-encodes only the JPEG
strips the click's damage touched (docs/decisions/0011-jpeg-in-strips.md); its own
time then falls to a fraction of a frame's, and the same fixed hops weigh more in the
ratio. So the ratio to the agent's own time is also shown on the whole-frame path: the
quality alternates between 85 and 84, so no strip of the last frame can be reused.

Run: .venv/bin/python -m bench.gateway_sim
"""

from __future__ import annotations

import re
import time
from typing import Any

from bench.lean_http import LeanClient
from bench.local_stack import rigway_up
from bench.stats import p50, row
from rigway.agent.backends.sim import SimDesktop
from rigway.agent.imaging import encode_jpeg

ROUNDS = 200
IDLE_S = 0.005
_HOST_JPEG = re.compile(r"host-jpeg;dur=([0-9.]+)")
_LINK = re.compile(r"link;dur=([0-9.]+)")


def checkbox_centre(client: LeanClient, session: str) -> tuple[int, int]:
    targets = client.get(f"/v1/sessions/{session}/targets").json()["targets"]
    box = next(t for t in targets if t["role"] == "check box")
    return box["x"] + box["w"] // 2, box["y"] + box["h"] // 2


def changed_screen(
    client: LeanClient,
    session: str,
    click: dict[str, Any],
    floor_desktop: SimDesktop,
    qualities: tuple[int, ...],
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"rtt": [], "host": [], "link": [], "floor": []}
    for round_number in range(ROUNDS):
        client.post(f"/v1/sessions/{session}/input", json=click)
        quality = qualities[round_number % len(qualities)]
        started = time.perf_counter()
        response = client.get(f"/v1/sessions/{session}/screenshot", params={"quality": quality})
        samples["rtt"].append((time.perf_counter() - started) * 1000)
        timing = response.headers["server-timing"]
        host, link = _HOST_JPEG.search(timing), _LINK.search(timing)
        assert host is not None, timing
        assert link is not None, timing
        samples["host"].append(float(host.group(1)))
        samples["link"].append(float(link.group(1)))
        started = time.perf_counter()
        encode_jpeg(floor_desktop.grab(), quality)
        samples["floor"].append((time.perf_counter() - started) * 1000)
    return samples


def _print_changed(title: str, samples: dict[str, list[float]]) -> None:
    rtt, host = samples["rtt"], samples["host"]
    print(title)
    print(row("  screenshot through the gateway (RTT)", rtt))
    overhead = [total - agent for total, agent in zip(rtt, host, strict=True)]
    print(row("  gateway RTT - host_jpeg_ms, per request", overhead))
    print(row("  host link round trip, seen by the gateway", samples["link"]))
    print(row("  agent capture+encode (host_jpeg_ms)", host))
    print(f"  ratio gateway p50 / agent p50: {p50(rtt) / p50(host):.2f}  (bar: <= 1.3)")
    print(row("  floor: sim grab + one-thread encode here", samples["floor"]))
    print(f"  ratio gateway p50 / floor p50: {p50(rtt) / p50(samples['floor']):.2f}")


def main() -> None:
    with rigway_up("sim") as local:
        headers = {"Authorization": f"Bearer {local['api_key']}"}
        with LeanClient(local["base_url"], headers) as client:
            created = client.post("/v1/sessions", json={"rig_id": local["rig_ids"][0]})
            session = created.json()["session_id"]
            x, y = checkbox_centre(client, session)
            click = {"events": [{"type": "mouse_click", "x": x, "y": y}]}
            floor_desktop = SimDesktop()
            for _ in range(20):  # warm-up: connections, SHM, encoder
                client.post(f"/v1/sessions/{session}/input", json=click)
                client.get(f"/v1/sessions/{session}/screenshot")
            strips = changed_screen(client, session, click, floor_desktop, (85,))
            whole = changed_screen(client, session, click, floor_desktop, (85, 84))
            unchanged_ms: list[float] = []
            after_idle_ms: list[float] = []
            observe_ms: list[float] = []
            for _ in range(ROUNDS):
                started = time.perf_counter()
                client.get(f"/v1/sessions/{session}/screenshot", params={"quality": 85})
                unchanged_ms.append((time.perf_counter() - started) * 1000)
            for _ in range(ROUNDS):
                time.sleep(IDLE_S)
                started = time.perf_counter()
                client.get(f"/v1/sessions/{session}/screenshot", params={"quality": 85})
                after_idle_ms.append((time.perf_counter() - started) * 1000)
            for _ in range(ROUNDS):
                started = time.perf_counter()
                client.get(f"/v1/sessions/{session}/observe", params={"image": 0})
                observe_ms.append((time.perf_counter() - started) * 1000)
            client.delete(f"/v1/sessions/{session}")
    print("sim desktop 1920x1080, JPEG q85, through the gateway (raw-socket client, own process)")
    _print_changed("changed screen: a click, q85 (strips reused)", strips)
    _print_changed("changed screen, whole frame: a click, q85/q84 alternating", whole)
    print(row("screenshot, unchanged screen (cached JPEG)", unchanged_ms))
    print(row(f"  the same, after {IDLE_S * 1000:.0f} ms idle", after_idle_ms))
    print(f"  wake-up cost of an idle chain, p50: {p50(after_idle_ms) - p50(unchanged_ms):.2f} ms")
    print(row("observe image=0", observe_ms))
    print(f"  observe image=0 p50: {p50(observe_ms):.2f} ms  (bar <= 10 ms)")


if __name__ == "__main__":
    main()
