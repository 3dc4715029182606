"""The bytes an agent receives per step, full observe against delta.

The scripted task of bench/agent_step.py (17 steps on gtk3-widget-factory, private
Xvfb at 1920x1080, `rigway up --desktop x11`), reused from there: its events are found
in a first pass, then replayed on a fresh copy of the app. After each step's batch
(with `settle`), untimed: `GET /observe?since=<the previous step's frame>` (the delta;
its answer's frame is the next step's `since`) and `GET /observe` (the full answer),
both at the same `max_width`. Bytes are the response body: the JSON without the image
plus the base64 images in it (the JPEGs' own sizes are printed too).

The bar: the deltas' bytes over the script are at most 25 % of the full observes'
(a page switch changes half the screen: no delta of it is a quarter of a full observe,
so a step's own ratio is printed, with p50 and p95, not held to the bar), and a delta
on an unchanged screen carries no image: after the last step, nothing done, with equal
whole-desktop screenshots taken just before and after it (else the app changed the
screen on its own, and that half of the bar is not measured).

Run: .venv/bin/python -m bench.observe_bytes
"""

from __future__ import annotations

import base64
import json
from typing import Any, NamedTuple

from bench.agent_step import FACTORY, _calibrate, _factory_ready, _fresh_app, _stack
from bench.step_methods import SETTLE
from bench.x11_gateway import Session

BAR_RATIO = 0.25
MAX_WIDTH = 1280  # what a model is commonly sent; the full desktop is 1920 wide


class Answer(NamedTuple):
    body_bytes: int  # the whole response body, as sent
    jpeg_bytes: int  # the decoded images (0: none)
    frame_id: str | None
    changed_region: list[int] | None
    images: int  # a delta's `changed_images` (a full observe's: 1)


def _observe(session: Session, since: str | None = None) -> Answer:
    params: dict[str, Any] = {"max_width": MAX_WIDTH}
    if since is not None:
        params["since"] = since
    response = session.client.get(f"/v1/sessions/{session.id}/observe", params=params)
    response.raise_for_status()
    body = json.loads(response.content)
    encoded = [image["jpeg_base64"] for image in body.get("changed_images", [])]
    if "jpeg_base64" in body:
        encoded.append(body["jpeg_base64"])
    jpeg = sum(len(base64.b64decode(image)) for image in encoded)
    return Answer(
        len(response.content), jpeg, body["frame_id"], body.get("changed_region"), len(encoded)
    )


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _print_step(label: str, full: Answer, delta: Answer) -> float:
    ratio = delta.body_bytes / full.body_bytes
    region = "none" if delta.changed_region is None else "x".join(map(str, delta.changed_region))
    print(
        f"{label[:34]:34} {full.body_bytes:>9} {full.jpeg_bytes:>9} "
        f"{delta.body_bytes:>9} {delta.jpeg_bytes:>9} {ratio:>7.1%} {delta.images:>4}  {region}"
    )
    return ratio


def main() -> None:
    with _stack() as stack:
        plan = _calibrate(stack, settle=True)
        _fresh_app(stack, [FACTORY], _factory_ready)
        session = stack.session
        since = _observe(session).frame_id
        print(f"observe bytes per step, max_width {MAX_WIDTH} (body = JSON with base64 image)")
        print(
            f"{'step':34} {'full':>9} {'full jpg':>9} {'delta':>9} {'delta jpg':>9} "
            f"{'ratio':>7} {'imgs':>4}  bounding box of the changed images (x_y_w_h)"
        )
        ratios, fulls, deltas = [], [], []
        for label, events in plan:
            session.post("/input", {"events": events, "settle": SETTLE})
            assert since is not None
            delta = _observe(session, since)
            full = _observe(session)
            since = delta.frame_id
            ratios.append(_print_step(label, full, delta))
            fulls.append(full.body_bytes)
            deltas.append(delta.body_bytes)
        assert since is not None
        _print_summary(ratios, fulls, deltas, _unchanged(session, since))


def _unchanged(session: Session, since: str) -> Answer | None:
    """A delta after the last step with nothing done, if the screen stayed the same
    around it (equal whole-desktop screenshots before and after); None when the app
    changed it on its own (the factory's pages animate a spinner), so the screen was
    not an unchanged one."""
    before = session.get("/screenshot").content
    answer = _observe(session, since)
    return answer if session.get("/screenshot").content == before else None


def _print_summary(
    ratios: list[float], fulls: list[int], deltas: list[int], still: Answer | None
) -> None:
    total = sum(deltas) / sum(fulls)
    print(f"total: full {sum(fulls)} B, delta {sum(deltas)} B ({total:.1%})")
    print(
        f"per-step ratio: p50 {_percentile(ratios, 0.5):.1%}, "
        f"p95 {_percentile(ratios, 0.95):.1%}, max {max(ratios):.1%}"
    )
    if still is None:
        print("unchanged screen: the app changed it on its own meanwhile; not measured")
        no_image = False
    else:
        image = "none" if still.changed_region is None else f"{still.jpeg_bytes} B"
        print(f"unchanged screen (after the last step): delta {still.body_bytes} B, image {image}")
        no_image = still.changed_region is None and still.images == 0
    print(f"bar: delta <= {BAR_RATIO:.0%} of full over the script: {_met(total <= BAR_RATIO)}")
    within = sum(ratio <= BAR_RATIO for ratio in ratios)
    print(f"(steps within {BAR_RATIO:.0%} on their own: {within} of {len(ratios)})")
    print(f"bar: an unchanged screen sends no image: {_met(no_image)}")


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


if __name__ == "__main__":
    main()
