"""The gateway's own share of a screenshot, this tree beside an earlier commit, in one run.

Per request: the round trip a client sees minus the host's own capture+encode
(`host-jpeg` in Server-Timing), on the sim desktop after a click (JPEG strips reused),
q85. Both trees run as `rigway up` (gateway and agent processes, as a user runs them),
in alternating blocks, so a slower or faster phase of the machine weighs on both alike.
The earlier commit is checked out in a temporary worktree and run from there.

Run: .venv/bin/python -m bench.gateway_overhead [--baseline 741c5f0] [--blocks 3]
     [--candidate REV]  (a commit instead of this working tree)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bench.gateway_sim import changed_screen, checkbox_centre
from bench.lean_http import LeanClient
from bench.local_stack import rigway_up
from bench.stats import p50, row
from rigway.agent.backends.sim import SimDesktop

REPOSITORY = Path(__file__).resolve().parent.parent
# The last commit before the request path moved onto public APIs only.
DEFAULT_BASELINE = "741c5f0"
BAR_MS = 1.5


@contextlib.contextmanager
def worktree_at(revision: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="rigway-baseline-") as parent:
        tree = Path(parent) / "tree"
        subprocess.run(
            ["git", "-C", str(REPOSITORY), "worktree", "add", "--detach", str(tree), revision],
            check=True,
            capture_output=True,
        )
        try:
            yield tree
        finally:
            subprocess.run(
                ["git", "-C", str(REPOSITORY), "worktree", "remove", "--force", str(tree)],
                check=False,
                capture_output=True,
            )


def overhead_block(source: Path, floor_desktop: SimDesktop) -> list[float]:
    """Per-request gateway overhead (ms) of `rigway up` run from `source`/src."""
    env = {**os.environ, "PYTHONPATH": str(source / "src")}
    with rigway_up("sim", env=env) as local:
        headers = {"Authorization": f"Bearer {local['api_key']}"}
        with LeanClient(local["base_url"], headers) as client:
            created = client.post("/v1/sessions", json={"rig_id": local["rig_ids"][0]})
            session = created.json()["session_id"]
            x, y = checkbox_centre(client, session)
            click = {"events": [{"type": "mouse_click", "x": x, "y": y}]}
            for _ in range(20):  # warm-up: connections, encoder
                client.post(f"/v1/sessions/{session}/input", json=click)
                client.get(f"/v1/sessions/{session}/screenshot")
            samples = changed_screen(client, session, click, floor_desktop, (85,))
            client.delete(f"/v1/sessions/{session}")
    return [rtt - host for rtt, host in zip(samples["rtt"], samples["host"], strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=DEFAULT_BASELINE)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--candidate", default=None)
    arguments = parser.parse_args()
    floor_desktop = SimDesktop()
    ours: list[float] = []
    theirs: list[float] = []
    with contextlib.ExitStack() as trees:
        baseline_tree = trees.enter_context(worktree_at(arguments.baseline))
        candidate_tree = (
            REPOSITORY
            if arguments.candidate is None
            else trees.enter_context(worktree_at(arguments.candidate))
        )
        for _ in range(arguments.blocks):
            theirs += overhead_block(baseline_tree, floor_desktop)
            ours += overhead_block(candidate_tree, floor_desktop)
    candidate = "this tree" if arguments.candidate is None else arguments.candidate
    print("gateway RTT - host_jpeg_ms per screenshot, sim 1920x1080 after a click, q85")
    print(row(f"  baseline {arguments.baseline}", theirs))
    print(row(f"  {candidate}", ours))
    verdict = "PASS" if p50(ours) <= BAR_MS else "FAIL"
    print(f"  {candidate} p50 {p50(ours):.2f} ms (bar <= {BAR_MS} ms): {verdict}")


if __name__ == "__main__":
    main()
