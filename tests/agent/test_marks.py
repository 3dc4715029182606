"""Set-of-mark labels: numbered by index, placed off the controls' own text, never on
each other; a crowded screen omits labels and says so."""

from __future__ import annotations

import numpy as np

from rigway.agent.imaging import Mark, index_marks, mark_image, render_jpeg
from rigway.agent.mark_layout import Box, LabelBox, inner_area, place_labels
from rigway.protocol import ops

LABEL = (20, 16)


def _grey(width: int, height: int) -> np.ndarray:
    image = np.empty((height, width, 4), dtype=np.uint8)
    image[:] = (200, 200, 200, 255)
    return image


def _placed(labels: list[LabelBox | None]) -> list[LabelBox]:
    return [label for label in labels if label is not None]


def _covers_text(label: Box, boxes: list[Box]) -> bool:
    return any((inner := inner_area(b)) is not None and label.intersects(inner) for b in boxes)


def test_a_lone_box_with_room_gets_its_label_above_left() -> None:
    (label,) = place_labels([Box(100, 100, 199, 129)], [LABEL], (400, 300))
    assert label == LabelBox(100, 84, 119, 99)


def test_a_box_at_the_top_edge_gets_its_label_below_left() -> None:
    (label,) = place_labels([Box(10, 0, 99, 29)], [LABEL], (400, 300))
    assert label is not None
    assert (label.left, label.top) == (10, 30)


def test_stacked_rows_keep_labels_off_every_rows_text_when_a_side_is_free() -> None:
    # A list of adjacent rows: above and below each row is another row's text, so
    # the labels must go beside the rows.
    rows = [Box(100, 40 + 20 * i, 299, 59 + 20 * i) for i in range(8)]
    labels = place_labels(rows, [LABEL] * len(rows), (500, 300))
    assert all(label is not None for label in labels)
    assert not any(_covers_text(label, rows) for label in _placed(labels))


def test_labels_never_cover_text_of_a_form_with_room_around_it() -> None:
    form = [
        Box(100, 50, 400, 75),
        Box(100, 90, 400, 115),
        Box(100, 130, 220, 150),
        Box(100, 165, 180, 190),
        Box(200, 165, 280, 190),
    ]
    labels = place_labels(form, [LABEL] * len(form), (640, 400))
    assert all(label is not None and not label.inside for label in labels)
    assert not any(_covers_text(label, form) for label in _placed(labels))


def test_a_500_target_screen_has_no_overlapping_labels_and_reports_omitted_ones() -> None:
    rng = np.random.default_rng(19)
    targets = [
        ops.Target(
            id=f"t_{i:010d}",
            role="push button",
            name=f"b{i}",
            x=int(rng.integers(0, 1860)),
            y=int(rng.integers(0, 1050)),
            w=int(rng.integers(8, 60)),
            h=int(rng.integers(8, 30)),
        )
        for i in range(500)
    ]
    marked = mark_image(
        _grey(1280, 720), index_marks(targets), origin=(0, 0), scale=(1280 / 1920, 720 / 1080)
    )
    placed = _placed(list(marked.labels))
    assert [m.index for m in marked.drawn] == list(range(1, 501))
    assert any(not m.labelled for m in marked.drawn)  # too crowded for all
    assert [m.labelled for m in marked.drawn] == [label is not None for label in marked.labels]
    for i, first in enumerate(placed):
        assert not any(first.intersects(other) for other in placed[i + 1 :])


def test_labels_are_index_numbers_and_the_answer_names_the_target_ids() -> None:
    marks = index_marks(
        [
            ops.Target(id="t_aaaaaaaaaa", role="push button", name="OK", x=50, y=50, w=60, h=20),
            ops.Target(id="t_bbbbbbbbbb", role="push button", name="No", x=50, y=120, w=60, h=20),
        ]
    )
    assert [(m.label, m.index, m.target_id) for m in marks] == [
        ("1", 1, "t_aaaaaaaaaa"),
        ("2", 2, "t_bbbbbbbbbb"),
    ]
    encoded = render_jpeg(_grey(400, 300), quality=80, max_width=None, region=None, marks=marks)
    assert encoded.marked
    assert [(m.index, m.target_id, m.labelled) for m in encoded.marks] == [
        (1, "t_aaaaaaaaaa", True),
        (2, "t_bbbbbbbbbb", True),
    ]


def test_no_marks_inside_the_image_is_unmarked_with_no_marks() -> None:
    marks = (Mark("1", 900, 900, 10, 10, target_id="t_x", index=1),)
    encoded = render_jpeg(_grey(400, 300), quality=80, max_width=None, region=None, marks=marks)
    assert not encoded.marked
    assert encoded.marks == ()


def test_labels_are_at_least_eleven_pixels_tall_on_a_downscaled_image() -> None:
    marks = (Mark("7", 400, 400, 200, 60, target_id="t_x", index=7),)
    marked = mark_image(_grey(1280, 720), marks, origin=(0, 0), scale=(1280 / 1920, 720 / 1080))
    (label,) = _placed(list(marked.labels))
    assert label.bottom - label.top + 1 >= 11 + 2  # digits plus the outline
