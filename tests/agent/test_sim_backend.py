"""The sim desktop: real state behind the `Desktop` protocol, exact damage, safe a11y."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from rigway.agent.backends.base import AccessibleElement, Desktop, Pixels, Rect, WalkBudget
from rigway.agent.backends.sim import (
    DESKTOP_BGRA,
    LIST_ITEMS,
    MAIN_WINDOW_ID,
    VISIBLE_ROWS,
    WINDOW_TITLE,
    SimDesktop,
)
from rigway.protocol.keys import UnknownKeyError

BUDGET = WalkBudget()


@pytest.fixture
def sim() -> SimDesktop:
    return SimDesktop()


def centre(rect: Rect) -> tuple[int, int]:
    return (rect.x + rect.w // 2, rect.y + rect.h // 2)


def click(sim: SimDesktop, control: str) -> None:
    sim.move_pointer(*centre(sim.control_rect(control)))
    sim.set_button("left", True)
    sim.set_button("left", False)


def press(sim: SimDesktop, key: str) -> None:
    sim.set_key(key, True)
    sim.set_key(key, False)


def changed_box(before: Pixels, after: Pixels) -> Rect:
    ys, xs = np.nonzero(np.any(before != after, axis=2))
    return Rect(
        int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)
    )


def contains(outer: Rect, inner: Rect) -> bool:
    return (
        outer.x <= inner.x
        and outer.y <= inner.y
        and inner.x + inner.w <= outer.x + outer.w
        and inner.y + inner.h <= outer.y + outer.h
    )


def element(sim: SimDesktop, key: str) -> AccessibleElement:
    snapshot = sim.snapshot_accessibility(BUDGET)
    return next(e for e in snapshot.elements if e.key == key)


def test_sim_satisfies_desktop_protocol(sim: SimDesktop) -> None:
    assert isinstance(sim, Desktop)
    assert sim.capture_mode == "sim"
    assert sim.has_damage is True


def test_grab_is_native_size_bgra_with_desktop_background(sim: SimDesktop) -> None:
    pixels = sim.grab()
    assert sim.native_size() == (1920, 1080)
    assert pixels.shape == (1080, 1920, 4)
    assert pixels.dtype == np.uint8
    assert pixels.flags.c_contiguous
    assert tuple(pixels[0, 0]) == DESKTOP_BGRA


def test_grab_returns_a_private_copy(sim: SimDesktop) -> None:
    first = sim.grab()
    first[:] = 0
    assert tuple(sim.grab()[0, 0]) == DESKTOP_BGRA


def test_custom_size_centres_the_window() -> None:
    sim = SimDesktop(800, 600)
    assert sim.native_size() == (800, 600)
    assert sim.window_rect() == Rect(120, 100, 560, 400)


def test_desktop_smaller_than_window_is_refused() -> None:
    with pytest.raises(ValueError, match="smaller than its window"):
        SimDesktop(320, 240)


def test_fresh_desktop_reports_no_damage(sim: SimDesktop) -> None:
    assert sim.poll_damage() == []


def test_typing_edits_the_focused_field(sim: SimDesktop) -> None:
    click(sim, "username")
    sim.type_text("alice")
    assert sim.focused_control == "username"
    assert sim.field_text("username") == "alice"
    assert element(sim, "sim:username").value == "alice"


def test_character_keys_type_and_shift_uppercases(sim: SimDesktop) -> None:
    press(sim, "b")
    sim.set_key("shift", True)
    press(sim, "o")
    press(sim, "1")
    sim.set_key("shift", False)
    press(sim, "b")
    assert sim.field_text("username") == "bO!b"


def test_backspace_deletes_the_last_character(sim: SimDesktop) -> None:
    sim.type_text("bob")
    press(sim, "backspace")
    assert sim.field_text("username") == "bo"


def test_ctrl_chord_does_not_type_its_letter(sim: SimDesktop) -> None:
    sim.set_key("ctrl", True)
    press(sim, "a")
    sim.set_key("ctrl", False)
    assert sim.field_text("username") == ""


def test_tab_moves_focus_to_the_password_field(sim: SimDesktop) -> None:
    press(sim, "tab")
    sim.type_text("hunter2")
    assert sim.focused_control == "password"
    assert sim.field_text("password") == "hunter2"
    assert sim.field_text("username") == ""


def test_unknown_key_name_is_refused(sim: SimDesktop) -> None:
    with pytest.raises(UnknownKeyError):
        sim.set_key("hyper", True)


def test_password_is_masked_in_the_snapshot(sim: SimDesktop) -> None:
    click(sim, "password")
    sim.type_text("hunter2")
    password = element(sim, "sim:password")
    assert password.masked is True
    assert password.value is None
    assert password.role == "password text"


def test_password_pixels_depend_only_on_its_length() -> None:
    one, other = SimDesktop(), SimDesktop()
    for sim, secret in ((one, "hunter2"), (other, "qwertyu")):
        click(sim, "password")
        sim.type_text(secret)
    box = one.control_rect("password")
    region = np.s_[box.y : box.y + box.h, box.x : box.x + box.w]
    assert np.array_equal(one.grab()[region], other.grab()[region])


def test_username_pixels_show_its_text() -> None:
    one, other = SimDesktop(), SimDesktop()
    one.type_text("alice")
    other.type_text("bobby")
    box = one.control_rect("username")
    region = np.s_[box.y : box.y + box.h, box.x : box.x + box.w]
    assert not np.array_equal(one.grab()[region], other.grab()[region])


def test_clicking_the_checkbox_toggles_it(sim: SimDesktop) -> None:
    click(sim, "remember")
    assert sim.checkbox_checked is True
    assert element(sim, "sim:remember").value == "checked"
    click(sim, "remember")
    assert sim.checkbox_checked is False


def test_release_outside_the_control_does_not_click(sim: SimDesktop) -> None:
    sim.move_pointer(*centre(sim.control_rect("remember")))
    sim.set_button("left", True)
    sim.move_pointer(5, 5)
    sim.set_button("left", False)
    assert sim.checkbox_checked is False


def test_sign_in_sets_the_status(sim: SimDesktop) -> None:
    sim.type_text("alice")
    click(sim, "sign_in")
    assert sim.status_text == "Signed in as alice"


def test_enter_in_a_field_signs_in(sim: SimDesktop) -> None:
    sim.type_text("alice\n")
    assert sim.status_text == "Signed in as alice"


def test_cancel_clears_the_fields(sim: SimDesktop) -> None:
    sim.type_text("alice\thunter2")
    click(sim, "cancel")
    assert sim.field_text("username") == ""
    assert sim.field_text("password") == ""
    assert sim.focused_control == "username"


def test_scrolling_down_over_the_list_shows_later_items(sim: SimDesktop) -> None:
    before = [e.name for e in sim.snapshot_accessibility(BUDGET).elements if e.role == "list item"]
    sim.move_pointer(*centre(sim.control_rect("recent")))
    sim.scroll(0, -1)
    after = [e.name for e in sim.snapshot_accessibility(BUDGET).elements if e.role == "list item"]
    assert sim.list_top_index > 0
    assert before == list(LIST_ITEMS[:VISIBLE_ROWS])
    assert after == list(sim.visible_items)
    assert after != before


def test_scrolling_is_clamped_to_the_list(sim: SimDesktop) -> None:
    sim.move_pointer(*centre(sim.control_rect("recent")))
    sim.scroll(0, -100)
    assert sim.list_top_index == len(LIST_ITEMS) - VISIBLE_ROWS
    sim.poll_damage()
    sim.scroll(0, -1)
    assert sim.poll_damage() == []


def test_scrolling_outside_the_list_changes_nothing(sim: SimDesktop) -> None:
    sim.move_pointer(5, 5)
    sim.scroll(0, -3)
    assert sim.list_top_index == 0
    assert sim.poll_damage() == []


def test_clicking_a_list_row_selects_that_item(sim: SimDesktop) -> None:
    row = sim.control_rect("recent")
    sim.move_pointer(row.x + 40, row.y + 2 + 24 * 2 + 10)
    sim.set_button("left", True)
    sim.set_button("left", False)
    assert sim.list_selected_index == 2
    assert element(sim, "sim:recent").value == LIST_ITEMS[2]


def test_typing_damages_exactly_the_field(sim: SimDesktop) -> None:
    before = sim.grab()
    sim.type_text("alice")
    field = sim.control_rect("username")
    assert sim.poll_damage() == [field]
    assert contains(field, changed_box(before, sim.grab()))


def test_damage_covers_every_changed_pixel_of_a_focus_change(sim: SimDesktop) -> None:
    before = sim.grab()
    click(sim, "remember")
    damage = sim.poll_damage()
    changed = np.any(before != sim.grab(), axis=2)
    covered = np.zeros_like(changed)
    for rect in damage:
        covered[rect.y : rect.y + rect.h, rect.x : rect.x + rect.w] = True
    assert changed.any()
    assert not (changed & ~covered).any()
    assert set(damage) == {sim.control_rect("username"), sim.control_rect("remember")}


def test_damage_is_consumed_by_the_read(sim: SimDesktop) -> None:
    sim.type_text("a")
    assert sim.poll_damage() != []
    assert sim.poll_damage() == []


def test_pointer_move_produces_no_damage(sim: SimDesktop) -> None:
    before = sim.grab()
    sim.move_pointer(*centre(sim.control_rect("sign_in")))
    assert sim.poll_damage() == []
    assert np.array_equal(before, sim.grab())


def test_typing_with_no_text_field_focused_produces_no_damage(sim: SimDesktop) -> None:
    click(sim, "sign_in")
    sim.poll_damage()
    sim.type_text("zzz")
    assert sim.poll_damage() == []


def test_damage_lies_inside_the_desktop(sim: SimDesktop) -> None:
    sim.type_text("alice\n")
    width, height = sim.native_size()
    for rect in sim.poll_damage():
        assert contains(Rect(0, 0, width, height), rect)


def test_element_keys_are_stable_across_snapshots(sim: SimDesktop) -> None:
    first = sim.snapshot_accessibility(BUDGET)
    sim.type_text("alice")
    sim.move_pointer(*centre(sim.control_rect("recent")))
    sim.scroll(0, -1)
    second = sim.snapshot_accessibility(BUDGET)
    first_keys = {e.name: e.key for e in first.elements}
    second_keys = {e.name: e.key for e in second.elements}
    shared = first_keys.keys() & second_keys.keys()
    assert {"Username", "Password", "Sign in", LIST_ITEMS[VISIBLE_ROWS - 1]} <= shared
    assert all(first_keys[name] == second_keys[name] for name in shared)


def test_snapshot_lists_the_window_controls(sim: SimDesktop) -> None:
    snapshot = sim.snapshot_accessibility(BUDGET)
    roles = {e.key: e.role for e in snapshot.elements}
    assert snapshot.window_title == WINDOW_TITLE
    assert snapshot.truncated is False
    assert roles["sim:username"] == "text"
    assert roles["sim:remember"] == "check box"
    assert roles["sim:sign_in"] == "push button"
    assert roles["sim:recent"] == "list"
    assert sum(role == "list item" for role in roles.values()) == VISIBLE_ROWS
    assert element(sim, "sim:username").focused is True


def test_snapshot_element_boxes_match_the_controls(sim: SimDesktop) -> None:
    username = element(sim, "sim:username")
    assert Rect(username.x, username.y, username.w, username.h) == sim.control_rect("username")


def test_budget_truncates_the_snapshot(sim: SimDesktop) -> None:
    snapshot = sim.snapshot_accessibility(WalkBudget(max_elements=3))
    assert len(snapshot.elements) == 3
    assert snapshot.truncated is True


def test_held_keys_and_buttons_are_observable(sim: SimDesktop) -> None:
    sim.set_key("shift", True)
    sim.set_button("right", True)
    assert sim.pressed_keys == frozenset({"shift"})
    assert sim.pressed_buttons == frozenset({"right"})
    sim.set_key("shift", False)
    sim.set_button("right", False)
    assert sim.pressed_keys == frozenset()
    assert sim.pressed_buttons == frozenset()


def test_non_latin_text_is_kept_and_drawn_without_error(sim: SimDesktop) -> None:
    sim.type_text("é漢字😀")
    assert sim.field_text("username") == "é漢字😀"
    assert sim.poll_damage() == [sim.control_rect("username")]


def test_main_window_is_listed_and_survives_close(sim: SimDesktop) -> None:
    assert sim.list_windows() == frozenset({MAIN_WINDOW_ID})
    sim.close_windows(frozenset({MAIN_WINDOW_ID}))
    assert sim.list_windows() == frozenset({MAIN_WINDOW_ID})


def test_input_and_capture_threads_can_run_together(sim: SimDesktop) -> None:
    def typist() -> None:
        for _ in range(200):
            press(sim, "x")

    worker = threading.Thread(target=typist)
    worker.start()
    damage: list[Rect] = []
    while worker.is_alive():
        sim.grab()
        damage.extend(sim.poll_damage())
    worker.join()
    damage.extend(sim.poll_damage())
    assert sim.field_text("username") == "x" * 200
    assert set(damage) == {sim.control_rect("username")}
