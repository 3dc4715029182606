"""HRESULT classes, the progressive wait and the rule that gives DXGI up."""

from __future__ import annotations

import pytest

from rigway.agent.backends.windows import dxgi_types as dx
from rigway.agent.backends.windows.dxgi_policy import (
    DUPLICATE_OUTPUT,
    Failure,
    HResultError,
    ProgressiveWait,
    Recovery,
    classify,
    classify_creation,
)
from tests.agent.windows.fake_capture import FakeClock


@pytest.mark.parametrize(
    ("code", "failure"),
    [
        (0x887A0027, Failure.NO_CHANGE),
        (dx.DXGI_ERROR_ACCESS_LOST, Failure.RECREATE),
        (dx.DXGI_ERROR_DEVICE_REMOVED, Failure.RECREATE),
        (dx.WAIT_ABANDONED, Failure.RECREATE),
        (dx.DXGI_ERROR_INVALID_CALL, Failure.RECREATE),
        (0x80070005, Failure.TRANSIENT_CREATION),
        (dx.DXGI_ERROR_UNSUPPORTED, Failure.TRANSIENT_CREATION),
        (dx.DXGI_ERROR_SESSION_DISCONNECTED, Failure.TRANSIENT_CREATION),
        (dx.DXGI_ERROR_NOT_CURRENTLY_AVAILABLE, Failure.TRANSIENT_CREATION),
        (dx.E_INVALIDARG, Failure.FATAL),
        (dx.DXGI_ERROR_MORE_DATA, Failure.FATAL),
    ],
)
def test_hresult_classified(code: int, failure: Failure) -> None:
    assert classify(code) is failure


def test_hresult_error_message_names_the_code() -> None:
    error = HResultError(0x887A0026, "AcquireNextFrame")
    assert error.hresult == dx.DXGI_ERROR_ACCESS_LOST
    assert str(error) == "AcquireNextFrame failed: DXGI_ERROR_ACCESS_LOST (0x887A0026)"


def test_progressive_wait_bands_follow_the_sample() -> None:
    wait = ProgressiveWait(FakeClock())
    delays = [wait.record_failure() for _ in range(85)]
    assert delays[:20] == [0.25] * 20
    assert delays[20:80] == [2.0] * 60
    assert delays[80:] == [5.0] * 5


def test_progressive_wait_refuses_retry_until_delay_passed() -> None:
    clock = FakeClock()
    wait = ProgressiveWait(clock)
    wait.record_failure()
    clock.advance(0.2)
    assert not wait.may_retry()
    clock.advance(0.05)
    assert wait.may_retry()


def test_progressive_wait_reset_starts_over() -> None:
    wait = ProgressiveWait(FakeClock())
    for _ in range(30):
        wait.record_failure()
    wait.reset()
    assert wait.may_retry()
    assert wait.record_failure() == 0.25


def lost() -> HResultError:
    return HResultError(dx.DXGI_ERROR_ACCESS_LOST, "AcquireNextFrame")


def test_recovery_losses_before_any_frame_give_up() -> None:
    recovery = Recovery(FakeClock(), give_up_after=3)
    for _ in range(3):
        recovery.created()
        recovery.lost(lost())
    assert recovery.is_exhausted
    assert recovery.reason is not None
    assert "DXGI_ERROR_ACCESS_LOST" in recovery.reason


def test_recovery_loss_after_a_frame_does_not_count() -> None:
    recovery = Recovery(FakeClock(), give_up_after=2)
    for _ in range(5):
        recovery.created()
        recovery.delivered()
        recovery.lost(lost())
    assert not recovery.is_exhausted


def test_recovery_access_denied_never_gives_up() -> None:
    recovery = Recovery(FakeClock(), give_up_after=2)
    for _ in range(100):
        recovery.creation_failed(HResultError(dx.E_ACCESSDENIED, "DuplicateOutput"))
    assert not recovery.is_exhausted


def test_recovery_unsupported_creations_give_up() -> None:
    recovery = Recovery(FakeClock(), give_up_after=2)
    recovery.creation_failed(HResultError(dx.DXGI_ERROR_UNSUPPORTED, "DuplicateOutput"))
    assert not recovery.is_exhausted
    recovery.creation_failed(HResultError(dx.DXGI_ERROR_UNSUPPORTED, "DuplicateOutput"))
    assert recovery.is_exhausted


def test_invalid_argument_from_duplicate_output_is_transient() -> None:
    error = HResultError(dx.E_INVALIDARG, DUPLICATE_OUTPUT)
    assert classify_creation(error) is Failure.TRANSIENT_CREATION


def test_invalid_argument_from_another_creation_step_is_fatal() -> None:
    error = HResultError(dx.E_INVALIDARG, "D3D11CreateDevice on \\\\.\\DISPLAY1")
    assert classify_creation(error) is Failure.FATAL


def test_recovery_retries_a_duplication_refused_while_the_old_one_lives() -> None:
    clock = FakeClock()
    recovery = Recovery(clock, give_up_after=2)
    recovery.creation_failed(HResultError(dx.E_INVALIDARG, DUPLICATE_OUTPUT))
    assert not recovery.is_exhausted
    clock.advance(0.25)
    assert recovery.may_retry()


def test_recovery_gives_up_on_a_duplication_refused_every_time() -> None:
    recovery = Recovery(FakeClock(), give_up_after=2)
    for _ in range(2):
        recovery.creation_failed(HResultError(dx.E_INVALIDARG, DUPLICATE_OUTPUT))
    assert recovery.is_exhausted


def test_recovery_fatal_creation_gives_up_at_once() -> None:
    recovery = Recovery(FakeClock())
    recovery.creation_failed(HResultError(dx.E_INVALIDARG, "D3D11CreateDevice on \\\\.\\X"))
    assert recovery.is_exhausted
    assert not recovery.may_retry()


def test_recovery_waits_after_loss_before_retry() -> None:
    clock = FakeClock()
    recovery = Recovery(clock)
    recovery.lost(lost())
    assert not recovery.may_retry()
    clock.advance(0.25)
    assert recovery.may_retry()
