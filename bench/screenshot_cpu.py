"""CPU spent per screenshot by each process of the chain, on the sim desktop.

A cached screenshot (unchanged screen) runs the whole chain (client, gateway, agent
loop and back) without an encode, so the CPU each process spends on it is the cost
of the hops alone. Read from /proc (the scheduler's run time of every thread) around
a run of requests, so it counts what a process really ran, whatever the scheduler did.

Two runs: back to back, and with 5 ms of idle before each request. On a VM whose idle
vCPUs halt, the second shows how much a cold cache multiplies the same work; that is
what a changed-screen screenshot pays on the way back from its encode
(bench/gateway_sim.py). CPU per request is what the gateway's capacity is made of, so
this is also the figure to watch when trimming the hot path.

Run: .venv/bin/python -m bench.screenshot_cpu
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

from bench.lean_http import LeanClient
from bench.local_stack import rigway_up
from bench.stats import p50

ROUNDS = 1500
IDLE_S = 0.005
BASELINE_S = 3.0


def _run_ns(pid: int | str) -> int:
    """Nanoseconds every thread of `pid` has run: the scheduler's own exact count
    (schedstat), not the tick-sampled utime/stime, which misjudge short bursts."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            total += int((task / "schedstat").read_text().split()[0])
    return total


def _pid_of(pattern: str) -> int:
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=True)
    return int(found.stdout.split()[0])


def main() -> None:
    with rigway_up("sim") as local:
        # The `[-]` keeps pgrep from matching its own command line.
        pids = {
            "gateway": _pid_of("[-]m rigway.cli.main up --port"),
            "agent": _pid_of("[-]m rigway.cli.main agent run"),
            "client": os.getpid(),
        }
        headers = {"Authorization": f"Bearer {local['api_key']}"}
        with LeanClient(local["base_url"], headers) as client:
            created = client.post("/v1/sessions", json={"rig_id": local["rig_ids"][0]})
            session = created.json()["session_id"]
            path = f"/v1/sessions/{session}/screenshot"
            for _ in range(50):  # warm-up: connections, the first encode
                client.get(path, params={"quality": 85})
            # What each process spends with no request at all (timers, the webhook
            # outbox), subtracted from each run by the run's length.
            idle_before = {name: _run_ns(pid) for name, pid in pids.items()}
            time.sleep(BASELINE_S)
            baseline_ns_per_s = {
                name: (_run_ns(pid) - idle_before[name]) / BASELINE_S for name, pid in pids.items()
            }
            print(f"sim desktop, cached screenshot q85, CPU per request over {ROUNDS} requests")
            print(
                "  with no requests: "
                + ", ".join(f"{name} {ns / 1e6:.1f} ms/s" for name, ns in baseline_ns_per_s.items())
                + " (subtracted below)"
            )
            for label, idle_s in (
                ("back to back", 0.0),
                (f"after {IDLE_S * 1000:.0f} ms idle", IDLE_S),
            ):
                before = {name: _run_ns(pid) for name, pid in pids.items()}
                run_started = time.perf_counter()
                round_trips_ms = []
                for _ in range(ROUNDS):
                    if idle_s:
                        time.sleep(idle_s)
                    started = time.perf_counter()
                    client.get(path, params={"quality": 85})
                    round_trips_ms.append((time.perf_counter() - started) * 1000)
                after = {name: _run_ns(pid) for name, pid in pids.items()}
                run_s = time.perf_counter() - run_started
                print(f"{label}: round trip p50 {p50(round_trips_ms):.2f} ms")
                for name in pids:
                    spent_ns = after[name] - before[name] - baseline_ns_per_s[name] * run_s
                    spent_us = spent_ns / ROUNDS / 1000
                    print(f"  {name:<8} {spent_us:6.0f} us of CPU per request")
            client.delete(f"/v1/sessions/{session}")


if __name__ == "__main__":
    main()
