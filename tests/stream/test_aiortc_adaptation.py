"""The agent's own H.264 encoder behind aiortc's sender: the version the adaptation was
written for, the encoder's behaviour on aiortc's `Encoder` interface, a real sender
using it, and no private name of aiortc anywhere in src/."""

from __future__ import annotations

import ast
import asyncio
import fractions
from pathlib import Path

import aiortc.codecs
import aiortc.rtcrtpsender
import av
import numpy as np
import pytest
from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCPeerConnection,
    RTCRtpReceiver,
    RTCSessionDescription,
)
from aiortc.codecs.h264 import h264_depayload
from aiortc.mediastreams import MediaStreamError

from rigway.agent.backends.sim import SimDesktop
from rigway.agent.screen import ScreenService
from rigway.agent.stream import StreamSettings, aiortc_adaptation
from rigway.agent.stream.aiortc_adaptation import TunedH264Encoder
from rigway.agent.stream.encoders import EncoderTuning
from rigway.agent.stream.publisher import StreamPublisher
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops

SRC = Path(__file__).resolve().parents[2] / "src"

# ---- the version it was written for ----------------------------------------------------


def test_the_installed_aiortc_is_one_the_adaptation_was_written_for() -> None:
    aiortc_adaptation.check_aiortc_version(aiortc_adaptation.installed_aiortc_version())


@pytest.mark.parametrize("version", ["1.16.0", "1.16.7", "1.16"])
def test_releases_of_the_series_are_accepted(version: str) -> None:
    aiortc_adaptation.check_aiortc_version(version)


@pytest.mark.parametrize("version", ["1.15.0", "1.17.0", "2.16.0", "1.16.0rc1", "1.16.0.dev3", ""])
def test_any_other_aiortc_is_refused_loudly(version: str) -> None:
    with pytest.raises(aiortc_adaptation.UnsupportedAiortcError) as refused:
        aiortc_adaptation.check_aiortc_version(version)
    message = str(refused.value)
    assert f"aiortc {version} is installed" in message
    assert "1.16.x" in message  # what it was written for
    assert "aiortc_adaptation" in message  # where to look


def test_a_refused_install_leaves_aiortcs_sender_untouched() -> None:
    with pytest.raises(aiortc_adaptation.UnsupportedAiortcError, match=r"1\.17\.0"):
        aiortc_adaptation.install("libx264", EncoderTuning(), aiortc_version="1.17.0")
    assert aiortc.rtcrtpsender.get_encoder is aiortc.codecs.get_encoder  # type: ignore[attr-defined]


# ---- the encoder, on aiortc's Encoder interface ------------------------------------------


def _frame(index: int, width: int = 1280, height: int = 720) -> av.VideoFrame:
    """A frame unlike the previous one, stamped as the track stamps them."""
    pixels = np.full((height, width, 3), (index * 37) % 256, np.uint8)
    frame = av.VideoFrame.from_ndarray(pixels, format="bgr24").reformat(format="yuv420p")
    frame.pts, frame.time_base = index * 3000, fractions.Fraction(1, 90_000)
    return frame


class Receiver:
    """Decodes the RTP payloads an encoder hands aiortc's sender, as a viewer would."""

    def __init__(self) -> None:
        self._decoder = av.CodecContext.create("h264", "r")

    def key_frames(self, payloads: list[bytes]) -> list[bool]:
        access_unit = b"".join(h264_depayload(payload) for payload in payloads)
        return [frame.key_frame for frame in self._decoder.decode(av.Packet(access_unit))]


def test_x264_runs_with_our_preset_and_keyframe_interval() -> None:
    encoder = TunedH264Encoder("libx264", EncoderTuning(preset="veryfast", keyframe_interval_s=10))
    payloads, timestamp = encoder.encode(_frame(0, 1920, 1080))
    assert timestamp == 0
    # x264 writes its settings into the first keyframe: veryfast is ref=1 subme=2.
    sei = b"".join(h264_depayload(payload) for payload in payloads)
    settings = sei[sei.find(b"x264 - core") :].split(b"\x00", 1)[0].decode("latin-1")
    assert " ref=1 " in settings, settings
    assert " subme=2 " in settings, settings
    assert " keyint=300 " in settings, settings
    assert " bframes=0 " in settings, settings


def test_a_keyframe_when_the_sender_asks_and_not_otherwise() -> None:
    encoder, receiver = TunedH264Encoder("libx264", EncoderTuning()), Receiver()
    asked = [False, False, True, False]
    seen = [receiver.key_frames(encoder.encode(_frame(i), force_keyframe=ask)[0]) for i, ask in
            enumerate(asked)]  # fmt: skip
    assert seen == [[True], [False], [True], [False]]


def test_the_timestamp_is_the_frames_time_on_the_rtp_clock() -> None:
    encoder = TunedH264Encoder("libx264", EncoderTuning())
    frame = _frame(0)
    frame.pts, frame.time_base = 250, fractions.Fraction(1, 1000)
    assert encoder.encode(frame)[1] == 22_500


def test_the_receivers_estimate_moves_the_bit_rate_within_the_tuning() -> None:
    encoder = TunedH264Encoder(
        "libx264", EncoderTuning(bitrate=4_000_000, min_bitrate=1_000_000, max_bitrate=6_000_000)
    )
    assert encoder.target_bitrate == 4_000_000
    encoder.target_bitrate = 50_000_000
    assert encoder.target_bitrate == 6_000_000
    encoder.target_bitrate = 10_000
    assert encoder.target_bitrate == 1_000_000


def test_a_large_bit_rate_move_reopens_the_encoder_and_a_small_one_does_not() -> None:
    encoder, receiver = TunedH264Encoder("libx264", EncoderTuning()), Receiver()
    assert receiver.key_frames(encoder.encode(_frame(0))[0]) == [True]
    encoder.target_bitrate = 4_200_000  # +5 %: the same encoder goes on
    assert receiver.key_frames(encoder.encode(_frame(1))[0]) == [False]
    encoder.target_bitrate = 2_000_000  # a new encoder starts with a keyframe
    assert receiver.key_frames(encoder.encode(_frame(2))[0]) == [True]


def test_a_new_picture_size_reopens_the_encoder() -> None:
    encoder, receiver = TunedH264Encoder("libx264", EncoderTuning()), Receiver()
    assert receiver.key_frames(encoder.encode(_frame(0))[0]) == [True]
    assert receiver.key_frames(encoder.encode(_frame(1, 640, 360))[0]) == [True]


def test_pre_encoded_packets_are_packed_as_aiortc_packs_them() -> None:
    source = TunedH264Encoder("libx264", EncoderTuning())
    payloads, _ = source.encode(_frame(0))
    packet = av.Packet(b"".join(h264_depayload(payload) for payload in payloads))
    packet.pts, packet.time_base = 9000, fractions.Fraction(1, 90_000)
    repacked, timestamp = TunedH264Encoder("libx264", EncoderTuning()).pack(packet)
    assert timestamp == 9000
    assert Receiver().key_frames(repacked) == [True]


def test_audio_is_refused() -> None:
    audio = av.AudioFrame(format="s16", layout="mono", samples=960)
    with pytest.raises(TypeError, match="video frames"):
        TunedH264Encoder("libx264", EncoderTuning()).encode(audio)


# ---- a real sender, through the publisher ------------------------------------------------


class KeyFrameViewer:
    """An aiortc peer that receives H.264 and records whether each decoded frame is a
    keyframe."""

    def __init__(self, wanted: int) -> None:
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.key_frames: list[bool] = []
        self.enough = asyncio.Event()
        self._wanted = wanted
        self._consumers: list[asyncio.Task[None]] = []

    async def offer(self) -> str:
        transceiver = self.pc.addTransceiver("video", direction="recvonly")
        capabilities = RTCRtpReceiver.getCapabilities("video")
        assert capabilities is not None
        transceiver.setCodecPreferences(
            [c for c in capabilities.codecs if c.mimeType in ("video/H264", "video/rtx")]
        )
        self.pc.on("track", self._on_track)
        await self.pc.setLocalDescription(await self.pc.createOffer())
        return str(self.pc.localDescription.sdp)

    async def accept(self, answer_sdp: str) -> None:
        await self.pc.setRemoteDescription(RTCSessionDescription(answer_sdp, "answer"))

    async def close(self) -> None:
        await self.pc.close()
        for consumer in self._consumers:
            consumer.cancel()
        await asyncio.gather(*self._consumers, return_exceptions=True)

    def _on_track(self, track: MediaStreamTrack) -> None:
        self._consumers.append(asyncio.ensure_future(self._consume(track)))

    async def _consume(self, track: MediaStreamTrack) -> None:
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            assert isinstance(frame, av.VideoFrame)
            self.key_frames.append(frame.key_frame)
            if len(self.key_frames) >= self._wanted:
                self.enough.set()


@pytest.mark.usefixtures("aiortc_encoders_restored", "loopback_media")
async def test_aiortcs_sender_encodes_with_the_publishers_encoder(
    screen_worker: SerialWorker,
) -> None:
    # A keyframe every frame, which aiortc's own encoder (x264's default interval of
    # 250) would never send: every decoded frame being one shows whose encoder ran.
    settings = StreamSettings(
        loopback_only=True, encoder="libx264", fps=30, keyframe_interval_s=1 / 30,
        keepalive_s=0.05, max_width=320,
    )  # fmt: skip
    screen = ScreenService(SimDesktop(width=640, height=400), screen_worker)
    publisher = StreamPublisher(screen, settings, choose_encoder=lambda preference: preference)
    viewer = KeyFrameViewer(wanted=3)
    try:
        offer = ops.StreamOffer(session_id="ses_1", viewer_id="vwr_1", sdp=await viewer.offer())
        answer = await publisher.offer(offer)
        assert (answer.encoder, answer.width, answer.height) == ("libx264", 320, 200)
        await viewer.accept(answer.sdp)
        # The first frame, then held frames again every keepalive_s (a still desktop).
        async with asyncio.timeout(20):
            await viewer.enough.wait()
        assert viewer.key_frames[:3] == [True, True, True]
    finally:
        await viewer.close()
        await publisher.close_all()


# ---- no private name of aiortc in src/ ------------------------------------------------


def private_aiortc_names(source: str) -> list[str]:
    """Underscore names reached through aiortc: modules, imported names, and attributes
    of a name bound to something imported from aiortc. (An attribute of an aiortc object
    held in a variable is beyond what a syntax check can see.)"""
    tree = ast.parse(source)
    bound: set[str] = set()
    found: list[str] = []

    def private(name: str) -> bool:
        return any(part.startswith("_") and not part.endswith("__") for part in name.split("."))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "aiortc":
                    found += [alias.name] if private(alias.name) else []
                    bound.add(alias.asname or "aiortc")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "aiortc":
            found += [node.module or ""] if private(node.module or "") else []
            for alias in node.names:
                found += [f"{node.module}.{alias.name}"] if private(alias.name) else []
                bound.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            root: ast.expr = node
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in bound:
                found.append(ast.unparse(node))
    return found


def test_the_check_finds_private_names_of_aiortc() -> None:
    source = "\n".join([
        "import aiortc.rtcrtpsender as sender",
        "from aiortc.codecs.h264 import H264Encoder, _private_helper",
        "from aiortc._internal import thing",
        "from aiortc import RTCPeerConnection",
        "sender._secret = 1",
        "H264Encoder._packetize([])",
        "RTCPeerConnection.__init__",  # a dunder is public
        "self._own = 1",  # ours
    ])  # fmt: skip
    assert private_aiortc_names(source) == [
        "aiortc.codecs.h264._private_helper",
        "aiortc._internal",
        "sender._secret",
        "H264Encoder._packetize",
    ]


def test_src_uses_no_private_name_of_aiortc() -> None:
    found = {
        str(path.relative_to(SRC)): names
        for path in sorted(SRC.rglob("*.py"))
        if (names := private_aiortc_names(path.read_text(encoding="utf-8")))
    }
    assert found == {}
