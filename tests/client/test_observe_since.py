"""`observe(since=…)`: the frame id goes in the query, the answer's changed images are
read, its frame is the whole picture (points map through it as through a full
observe's), and its targets diff updates the remembered targets."""

from __future__ import annotations

from typing import Any

from rigway.client import Rigway

from .conftest import FakeGateway, ok, square_observation

OBSERVE = "/v1/sessions/ses_1/observe"


def box(target_id: str, name: str, x: int) -> dict[str, Any]:
    return {"id": target_id, "x": x, "y": 0, "w": 10, "h": 10, "role": "button", "name": name}


def _delta(**fields: Any) -> dict[str, Any]:
    answer = square_observation([], **fields)
    del answer["targets"]  # a delta answer has targets_diff in its place
    return answer


def test_since_is_sent_and_the_diff_updates_the_remembered_targets(
    client: Rigway, session_gateway: FakeGateway
) -> None:
    first = [box("t_a", "A", 0), box("t_b", "B", 20), box("t_c", "C", 40)]
    diff = {"added": [box("t_d", "D", 60)], "removed": ["t_b"], "changed": [box("t_c", "C2", 45)]}
    session_gateway.on(
        "GET",
        OBSERVE,
        ok(square_observation(first, frame_id="frm_1")),
        ok(
            _delta(
                frame_id="frm_2",
                changed_region=[40, 0, 20, 10],
                changed_images=[
                    {"region": [40, 0, 20, 10], "width": 20, "height": 10, "jpeg_base64": "/9g="}
                ],
                targets_diff=diff,
            )
        ),
    )
    session = client.sessions.create(rig_id="rig_1")
    session.observe()

    result = session.observe(since="frm_1")

    assert session_gateway.last.url.params["since"] == "frm_1"
    assert [(t.id, t.name) for t in session.latest_targets] == [
        ("t_a", "A"),
        ("t_c", "C2"),
        ("t_d", "D"),
    ]
    assert result.changed_region == (40, 0, 20, 10)
    assert result.targets_diff is not None
    assert result.targets_diff.removed == ["t_b"]
    assert result.changed_images is not None
    [image] = result.changed_images
    assert (image.region, image.width, image.jpeg) == ((40, 0, 20, 10), 20, b"\xff\xd8")
    assert result.region is None


def test_a_plain_observe_sends_no_since(client: Rigway, session_gateway: FakeGateway) -> None:
    session_gateway.on("GET", OBSERVE, ok(square_observation([box("t_a", "A", 0)])))
    result = client.sessions.create(rig_id="rig_1").observe()
    assert "since" not in session_gateway.last.url.params
    assert (result.changed_region, result.targets_diff) == (None, None)
    assert result.changed_images is None
