"""The encoder choice, its options, the SDP edits and the damage-gated track, without
a network."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from rigway.agent.backends.base import Pixels
from rigway.agent.backends.sim import DESKTOP_BGRA, SimDesktop
from rigway.agent.screen import ScreenService
from rigway.agent.stream import StreamError, StreamSettings, encoders
from rigway.agent.stream.encoders import EncoderTuning, choose_h264_encoder
from rigway.agent.stream.publisher import StreamPublisher
from rigway.agent.stream.sdp import (
    UnsupportedOfferError,
    is_loopback_candidate,
    keep_loopback_candidates,
    prefer_h264,
)
from rigway.agent.stream.track import DesktopTrack, scaled_size, to_video_frame
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops

# ---- which encoder ----------------------------------------------------------------------


def _fake(available: set[str], openable: set[str]) -> dict[str, object]:
    return {"is_available": available.__contains__, "can_open": openable.__contains__}


@pytest.mark.parametrize(
    ("preference", "available", "openable", "chosen"),
    [
        # PyAV lists NVENC/AMF/QSV on every machine; only an open proves the hardware.
        ("auto", {"h264_nvenc", "h264_amf", "h264_qsv"}, set(), "libx264"),
        ("auto", {"h264_nvenc", "h264_amf", "h264_qsv"}, {"h264_qsv"}, "h264_qsv"),
        ("auto", {"h264_nvenc", "h264_qsv"}, {"h264_nvenc", "h264_qsv"}, "h264_nvenc"),
        ("auto", {"h264_amf", "h264_mf"}, {"h264_amf", "h264_mf"}, "h264_amf"),
        ("auto", {"h264_mf"}, {"h264_mf"}, "h264_mf"),
        ("auto", set(), {"h264_nvenc"}, "libx264"),
        ("libx264", {"h264_nvenc"}, {"h264_nvenc"}, "libx264"),
        ("h264_qsv", {"h264_nvenc", "h264_qsv"}, {"h264_nvenc", "h264_qsv"}, "h264_qsv"),
        ("h264_qsv", {"h264_qsv"}, set(), "libx264"),
    ],
)
def test_the_encoder_choice(
    preference: str, available: set[str], openable: set[str], chosen: str
) -> None:
    assert choose_h264_encoder(preference, available.__contains__, openable.__contains__) == chosen


def test_no_encoder_is_opened_that_is_not_listed() -> None:
    opened: list[str] = []

    def can_open(name: str) -> bool:
        opened.append(name)
        return False

    choose_h264_encoder("auto", {"h264_amf"}.__contains__, can_open)
    assert opened == ["h264_amf"]


def test_libx264_opens_here_and_hardware_without_a_device_does_not() -> None:
    assert encoders.probe_h264_encoder("libx264")
    assert not encoders.probe_h264_encoder("h264_no_such_encoder")


def test_low_latency_options() -> None:
    tuning = EncoderTuning(preset="ultrafast", fps=30, keyframe_interval_s=2)
    x264 = encoders.encoder_options("libx264", tuning, 1920, 1080)
    assert x264 == {"preset": "ultrafast", "tune": "zerolatency", "level": "40", "g": "60"}
    nvenc = encoders.encoder_options("h264_nvenc", tuning, 1920, 1080)
    assert nvenc["bf"] == "0"
    assert nvenc["zerolatency"] == "1"
    assert encoders.pixel_format("h264_qsv") == "nv12"
    assert encoders.pixel_format("libx264") == "yuv420p"


@pytest.mark.parametrize(
    ("size", "fps", "level"),
    [((1280, 720), 30, "31"), ((1920, 1080), 30, "40"), ((1920, 1080), 60, "42"),
     ((2560, 1440), 30, "50"), ((3840, 2160), 30, "51"), ((3840, 2160), 60, "52")],
)  # fmt: skip
def test_the_h264_level_fits_the_picture(size: tuple[int, int], fps: int, level: str) -> None:
    assert encoders.h264_level(*size, fps) == level


# ---- SDP ------------------------------------------------------------------------------

OFFER = "\r\n".join([
    "v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0",
    "m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103",
    "a=rtpmap:96 VP8/90000", "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96",
    "a=rtpmap:102 H264/90000", "a=rtpmap:103 rtx/90000",
    "a=candidate:1 1 udp 2122260223 10.1.2.3 50000 typ host",
    "a=candidate:2 1 udp 2122260223 127.0.0.1 50001 typ host",
    "a=candidate:3 1 udp 2122260223 0b1c6b7c-0f9a.local 50002 typ host",
]) + "\r\n"  # fmt: skip


def test_h264_goes_first_in_the_offer_aiortc_reads() -> None:
    assert "m=video 9 UDP/TLS/RTP/SAVPF 102 96 97 103" in prefer_h264(OFFER)
    with pytest.raises(UnsupportedOfferError):
        prefer_h264(OFFER.replace("H264", "VP9"))


def test_only_loopback_candidates_are_kept() -> None:
    kept = keep_loopback_candidates(OFFER)
    assert "127.0.0.1 50001" in kept
    assert "10.1.2.3" not in kept
    assert ".local" not in kept
    assert is_loopback_candidate("candidate:2 1 udp 1 127.0.0.1 5 typ host")
    assert not is_loopback_candidate("candidate:2 1 udp 1 ab.local 5 typ host")
    assert not is_loopback_candidate("candidate:broken")


@pytest.mark.parametrize(
    ("size", "cap", "scaled"),
    [((1920, 1080), None, (1920, 1080)), ((1920, 1080), 1280, (1280, 720)),
     ((1366, 768), 1000, (1000, 562)), ((1365, 767), None, (1364, 766)),
     ((800, 600), 1280, (800, 600))],
)  # fmt: skip
def test_the_picture_size_under_a_cap(
    size: tuple[int, int], cap: int | None, scaled: tuple[int, int]
) -> None:
    assert scaled_size(*size, cap) == scaled


@pytest.mark.parametrize(
    ("size", "cap", "out"),
    [((1080, 1920), None, (1920, 1080)), ((1080, 1920), 1280, (1280, 720)),
     ((767, 1365), None, (1364, 766))],
)  # fmt: skip
def test_frames_are_i420_of_the_capped_size_and_true_colour(
    size: tuple[int, int], cap: int | None, out: tuple[int, int]
) -> None:
    pixels = np.empty((*size, 4), np.uint8)
    pixels[:] = DESKTOP_BGRA
    frame = to_video_frame(pixels, cap)
    assert (frame.width, frame.height, frame.format.name) == (*out, "yuv420p")
    rgb = frame.to_ndarray(format="rgb24")[out[1] // 2, out[0] // 2].astype(int)
    assert np.abs(rgb - np.array(DESKTOP_BGRA[2::-1])).max() <= 4


# ---- the track: only changes are encoded -------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


class ScriptedSource:
    """Changed pixels on the ticks listed, nothing on the others."""

    def __init__(self, changes_at: set[int]) -> None:
        self.changes_at = changes_at
        self.tick = 0
        self.pixels: Pixels = np.full((64, 96, 4), 200, np.uint8)

    async def changed_pixels(self) -> Pixels | None:
        self.tick += 1
        return self.pixels if self.tick in self.changes_at else None

    async def close(self) -> None:
        pass


async def test_a_still_desktop_encodes_nothing_but_a_slow_keepalive() -> None:
    clock = FakeClock()
    source = ScriptedSource(changes_at={1, 40})
    track = DesktopTrack(
        source, fps=30, keepalive_s=1.0, max_width=None,
        monotonic=clock.monotonic, sleep=clock.sleep,
    )  # fmt: skip
    frames, pts = [], []
    for _ in range(4):
        frame = await track.recv()
        frames.append(frame)
        assert frame.pts is not None  # the track stamps every frame it returns
        pts.append(frame.pts)  # a held frame is the same object, re-stamped
    track.stop()
    # tick 1: fresh; ticks 2-30 idle then the held frame after 1 s; tick 40 fresh; then
    # the keepalive one second after that.
    assert track.stats.encoded == 2
    assert track.stats.keepalives == 2
    assert track.stats.idle_ticks > 50
    assert [f.width for f in frames] == [96] * 4
    assert [f.format.name for f in frames] == ["yuv420p"] * 4
    assert pts[0] == 0
    assert pts == sorted(pts)
    assert pts[1] == pytest.approx(90_000, abs=3_000)


# ---- the damage fan-out: streams and the API each see every change --------------------


async def test_a_stream_watch_does_not_steal_the_apis_dirty_rects(
    screen_worker: SerialWorker,
) -> None:
    sim = SimDesktop(width=1280, height=720)
    screen = ScreenService(sim, screen_worker)
    first, second = await screen.open_watch(), await screen.open_watch()
    assert await screen.stream_pixels(first) is not None  # the first frame is always due
    assert await screen.stream_pixels(first) is None  # nothing changed since
    box = sim.control_rect("remember")
    await asyncio.to_thread(sim.move_pointer, box.x + 2, box.y + 2)  # the sim draws no pointer
    assert await screen.stream_pixels(first) is None
    await asyncio.to_thread(sim.set_button, "left", True)
    await asyncio.to_thread(sim.set_button, "left", False)
    pixels = await screen.stream_pixels(first)
    assert pixels is not None
    assert pixels.shape == (720, 1280, 4)
    # The API still gets the rectangles, and the other stream still sees the change.
    assert (await screen.take_dirty()).rects
    assert await screen.stream_pixels(second) is not None
    await screen.close_watch(first)
    await screen.close_watch(second)


@pytest.mark.usefixtures("aiortc_encoders_restored")
async def test_the_publisher_refuses_offers_it_cannot_answer(
    screen_worker: SerialWorker,
) -> None:
    screen = ScreenService(SimDesktop(width=1280, height=720), screen_worker)
    publisher = StreamPublisher(screen, StreamSettings(), choose_encoder=lambda _: "libx264")

    def offer(sdp: str) -> ops.StreamOffer:
        return ops.StreamOffer(session_id="ses_1", viewer_id="vwr_1", sdp=sdp)

    with pytest.raises(StreamError, match=r"no H\.264"):
        await publisher.offer(offer(OFFER.replace("H264", "VP9")))
    with pytest.raises(StreamError, match="does not parse"):
        await publisher.offer(offer("m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 H264/90000\r\n"))
    assert publisher.viewer_count() == 0
    await publisher.close_all()
