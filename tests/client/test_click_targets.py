"""`click(target=…)`: an id, a 1-based index from the latest observe, or a name."""

from __future__ import annotations

from typing import Any

import pytest

from rigway.client import (
    AmbiguousTargetError,
    ObserveResult,
    Rigway,
    SessionHandle,
    Target,
    TargetList,
    TargetNotFoundError,
)
from rigway.client._screen_models import pick_target

from .conftest import FakeGateway, body_of, ok, square_observation

INPUT = "/v1/sessions/ses_1/input"
TARGETS = "/v1/sessions/ses_1/targets"


def box(target_id: str, name: str, x: int, role: str = "button") -> dict[str, Any]:
    return {"id": target_id, "x": x, "y": 0, "w": 10, "h": 10, "role": role, "name": name}


SNAPSHOT = [
    box("t_save", "Save", 0),
    box("t_saveas", "Save as…", 20),
    box("t_lower", "save draft", 40),
    box("t_ok", "OK", 60),
    box("t_ok2", "OK", 80),
]


@pytest.fixture
def session(client: Rigway, session_gateway: FakeGateway) -> SessionHandle:
    session_gateway.on("GET", "/v1/sessions/ses_1/observe", ok(square_observation(SNAPSHOT)))
    handle = client.sessions.create(rig_id="rig_1")
    handle.observe()
    return handle


def clicked_x(gateway: FakeGateway) -> int:
    x: int = body_of(gateway.calls("POST", INPUT)[-1])["events"][0]["x"]
    return x


def test_an_int_is_a_one_based_index_into_the_latest_observe(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session.click(target=1)
    first = clicked_x(session_gateway)
    session.click(target=4)
    assert (first, clicked_x(session_gateway)) == (5, 65)


def test_an_index_past_the_list_fails_without_fetching(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    for index in (0, 6, -1):
        with pytest.raises(TargetNotFoundError, match="numbered from 1"):
            session.click(target=index)
    assert session_gateway.calls("GET", TARGETS) == []
    assert session_gateway.calls("POST", INPUT) == []


def test_ids_still_win_over_names(session: SessionHandle, session_gateway: FakeGateway) -> None:
    session.click(target="t_saveas")
    assert clicked_x(session_gateway) == 25


@pytest.mark.parametrize(
    ("name", "x"),
    [
        ("Save", 5),  # exact beats the substring in "Save as…"
        ("save draft", 45),  # exact
        ("SAVE DRAFT", 45),  # ignoring case
        ("draft", 45),  # the one substring
        ("as…", 25),
    ],
)
def test_a_name_matches_exactly_then_ignoring_case_then_as_a_substring(
    session: SessionHandle, session_gateway: FakeGateway, name: str, x: int
) -> None:
    session.click(target=name)
    assert clicked_x(session_gateway) == x


def test_an_ambiguous_name_raises_with_the_candidates(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    with pytest.raises(AmbiguousTargetError) as caught:
        session.click(target="OK")
    with pytest.raises(AmbiguousTargetError) as by_substring:
        session.click(target="sav")

    assert [t.id for t in caught.value.candidates] == ["t_ok", "t_ok2"]
    assert "t_ok2" in str(caught.value)
    assert [t.id for t in by_substring.value.candidates] == ["t_save", "t_saveas", "t_lower"]
    assert session_gateway.calls("POST", INPUT) == []


def test_an_unknown_name_is_looked_for_once_more_in_fresh_targets(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    fresh = {"width": 100, "height": 100, "targets": [box("t_new", "Cancel", 90)]}
    session_gateway.on("GET", TARGETS, ok(fresh))

    session.click(target="cancel")

    assert clicked_x(session_gateway) == 95
    assert len(session_gateway.calls("GET", TARGETS)) == 1


def test_a_name_nothing_matches_raises_not_found(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session_gateway.on("GET", TARGETS, ok({"width": 100, "height": 100, "targets": []}))
    with pytest.raises(TargetNotFoundError) as caught:
        session.click(target="Nowhere")
    assert caught.value.target_id == "Nowhere"


def test_a_target_with_image_coords_is_refused(session: SessionHandle) -> None:
    with pytest.raises(ValueError, match="native"):
        session.click(target=1, frame_id="frm_1", coords="image")


def test_bool_and_empty_targets_are_refused(session: SessionHandle) -> None:
    with pytest.raises(TypeError):
        session.click(target=True)
    with pytest.raises(ValueError, match="empty"):
        session.click(target="")


def test_pick_target_is_pure_and_returns_none_for_no_match() -> None:
    targets = [Target.model_validate(t) for t in SNAPSHOT]
    assert pick_target("zzz", targets) is None
    assert pick_target(2, targets) == targets[1]
    assert pick_target(2, []) is None


def test_lists_look_targets_up_and_number_their_lines_from_one() -> None:
    observed = ObserveResult.model_validate(
        square_observation([*SNAPSHOT[:2], {**SNAPSHOT[3], "focused": True, "name": ""}])
    )
    listed = TargetList.model_validate({"width": 100, "height": 100, "targets": SNAPSHOT})

    assert observed.target_lines() == [
        "[1] Save (button) id=t_save",
        "[2] Save as… (button) id=t_saveas",
        "[3] (unnamed) (button) [focused] id=t_ok",
    ]
    assert observed.lookup(2) == observed.targets[1]
    assert listed.lookup("save draft") == listed.targets[2]
    assert listed.lookup("nothing") is None
    with pytest.raises(AmbiguousTargetError):
        listed.lookup("ok")
