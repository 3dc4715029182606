"""How big a recording grows: a 20-step session on the sim desktop (1920x1080) started
with `record: true`, through `rigway up --desktop sim`.

The steps are an agent's usual loop: a screenshot, then rounds of an input batch (a
click, typed text or a key) followed by an observe, every image at max_width 1280 and
the default quality. The recording is then read as the zip (`GET /recording`) and its
steps are sized as they are kept: each step's JSON record (`steps.jsonl`) plus its JPEG,
if it served one. Printed: the total, the per-step median and p95 by kind, and the zip.
What fits under the default caps (`recording_max_bytes` 200 MiB, `recording_max_steps`
10,000) follows from these.

Run: .venv/bin/python -m bench.recording_size
"""

from __future__ import annotations

import io
import json
import statistics
import zipfile
from typing import Any

import httpx2

from bench.lean_http import LeanClient
from bench.local_stack import rigway_up
from bench.stats import p95

STEPS = 20
MAX_WIDTH = 1280
DEFAULT_CAP_BYTES = 200 * 1024 * 1024
DEFAULT_CAP_STEPS = 10_000


def _centre(targets: list[dict[str, Any]], name: str) -> tuple[int, int]:
    target = next(t for t in targets if t["name"] == name)
    return target["x"] + target["w"] // 2, target["y"] + target["h"] // 2


def _batches(targets: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    user = _centre(targets, "Username")
    box = _centre(targets, "Remember me")
    click_user = {"type": "mouse_click", "x": user[0], "y": user[1]}
    return [
        [click_user, {"type": "type_text", "text": "ada"}],
        [{"type": "mouse_click", "x": box[0], "y": box[1]}],
        [{"type": "key_press", "key": "tab"}],
    ]


def _record(client: LeanClient, session: str) -> None:
    """1 screenshot, 1 observe, then batch + observe pairs: STEPS steps in all."""
    base = f"/v1/sessions/{session}"
    params = {"max_width": MAX_WIDTH}
    client.get(f"{base}/screenshot", params=params).raise_for_status()
    observed = client.get(f"{base}/observe", params=params)
    observed.raise_for_status()
    batches = _batches(observed.json()["targets"])
    for round_number in range((STEPS - 2) // 2):
        events = batches[round_number % len(batches)]
        client.post(f"{base}/input", json={"events": events}).raise_for_status()
        client.get(f"{base}/observe", params=params).raise_for_status()


def _sizes(archive: zipfile.ZipFile) -> dict[str, list[float]]:
    """Bytes per step, by kind and in all: its JSON record plus its JPEG."""
    sizes: dict[str, list[float]] = {"all": []}
    for line in archive.read("steps.jsonl").decode().splitlines():
        step = json.loads(line)
        size = len(line.encode())
        if step["frame"] is not None:
            size += archive.getinfo(step["frame"]).file_size
        sizes.setdefault(step["kind"], []).append(size)
        sizes["all"].append(size)
    return sizes


def _kib_row(label: str, samples: list[float]) -> str:
    return (
        f"{label:<28} median {statistics.median(samples) / 1024:8.1f} KiB   "
        f"p95 {p95(samples) / 1024:8.1f} KiB   n={len(samples)}"
    )


def main() -> None:
    with rigway_up("sim") as local:
        headers = {"Authorization": f"Bearer {local['api_key']}"}
        with LeanClient(local["base_url"], headers) as client:
            started = client.post(
                "/v1/sessions", json={"rig_id": local["rig_ids"][0], "record": True}
            )
            started.raise_for_status()
            session = started.json()["session_id"]
            _record(client, session)
            client.request("DELETE", f"/v1/sessions/{session}").raise_for_status()
        # Streamed (chunked), which the lean client does not read.
        answer = httpx2.get(
            f"{local['base_url']}/v1/sessions/{session}/recording", headers=headers, trust_env=False
        )
        answer.raise_for_status()
    archive = zipfile.ZipFile(io.BytesIO(answer.content))
    manifest = json.loads(archive.read("manifest.json"))
    sizes = _sizes(archive)
    total = sum(sizes["all"])
    print(f"sim desktop 1920x1080, {STEPS} steps, images at max_width {MAX_WIDTH}")
    print(f"recording: {manifest['steps']} steps, {manifest['frames']} frames")
    print(f"  kept bytes (manifest)        {manifest['bytes'] / 1024:8.1f} KiB")
    print(f"  steps.jsonl + JPEGs          {total / 1024:8.1f} KiB")
    print(f"  zip as downloaded            {len(answer.content) / 1024:8.1f} KiB")
    print(_kib_row("  per step", sizes["all"]))
    for kind in ("screenshot", "observe", "input"):
        if kind in sizes:
            print(_kib_row(f"  per {kind}", sizes[kind]))
    by_bytes = DEFAULT_CAP_BYTES / (total / len(sizes["all"]))
    print(
        f"  at this mean, the default caps (200 MiB, {DEFAULT_CAP_STEPS:,} steps) keep"
        f" {min(by_bytes, DEFAULT_CAP_STEPS):,.0f} steps (the byte cap alone: {by_bytes:,.0f})"
    )


if __name__ == "__main__":
    main()
