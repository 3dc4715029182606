"""The damage log answers "what changed since mark M" without taking from anyone else."""

from __future__ import annotations

import pytest

from rigway.agent.backends.base import Rect
from rigway.agent.damage_log import DamageLog

A = Rect(0, 0, 10, 10)
B = Rect(20, 20, 5, 5)


def test_since_a_mark_returns_what_came_after_it_in_order() -> None:
    log = DamageLog()
    log.add([A])
    mark = log.mark
    log.add([B])
    log.add([A, B])
    assert log.since(mark) == [B, A, B]


def test_nothing_since_the_latest_mark() -> None:
    log = DamageLog()
    log.add([A])
    assert log.since(log.mark) == []


def test_empty_polls_do_not_move_the_mark() -> None:
    log = DamageLog()
    mark = log.mark
    log.add([])
    assert log.mark == mark


def test_a_mark_older_than_the_log_reaches_is_unknown() -> None:
    log = DamageLog(max_entries=2)
    first = log.mark
    log.add([A])
    second = log.mark
    log.add([B])
    log.add([A])  # evicts entry 1: `first` can no longer be answered
    assert log.since(first) is None
    assert log.since(second) == [B, A]


def test_clear_makes_earlier_marks_unknown_and_starts_afresh() -> None:
    log = DamageLog()
    log.add([A])
    before = log.mark
    log.clear()
    assert log.since(before) is None
    assert log.since(log.mark) == []
    log.add([B])
    assert log.since(log.mark - 1) == [B]


def test_a_mark_never_given_out_is_unknown() -> None:
    log = DamageLog()
    assert log.since(5) is None


def test_at_least_one_entry_is_kept() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        DamageLog(max_entries=0)
