"""Small SDP edits on the agent's side of a negotiation (pure text functions).

- `prefer_h264`: aiortc as answerer picks the first codec of the offer that it knows,
  inside `setRemoteDescription`, before `setCodecPreferences` could act (seen: an
  offer with VP8 first got a VP8 answer). Moving H.264 to the front of the offer it
  reads makes it answer H.264 whatever order the viewer used; the viewer accepts any
  codec it offered.
- `keep_loopback_candidates` / `is_loopback_candidate`: with `loopback_only`, media
  never leaves 127.0.0.1 (tests): other host candidates and mDNS names (which aioice
  would resolve with multicast DNS) are dropped.
"""

from __future__ import annotations

import ipaddress

__all__ = [
    "UnsupportedOfferError",
    "is_loopback_candidate",
    "keep_loopback_candidates",
    "prefer_h264",
]

_CANDIDATE_PREFIX = "a=candidate:"


class UnsupportedOfferError(ValueError):
    """The offer has no video section with H.264."""


def prefer_h264(sdp: str) -> str:
    lines = sdp.splitlines()
    h264_types = _h264_payload_types(lines)
    found = False
    for index, line in enumerate(lines):
        if not line.startswith("m=video "):
            continue
        fields = line.split(" ")
        formats = fields[3:]
        first = [f for f in formats if f in h264_types]
        if first:
            found = True
            lines[index] = " ".join(fields[:3] + first + [f for f in formats if f not in first])
    if not found:
        raise UnsupportedOfferError("the offer has no H.264 video: offer H.264 first")
    return "\r\n".join(lines) + "\r\n"


def _h264_payload_types(lines: list[str]) -> set[str]:
    # a=rtpmap:<pt> H264/90000 (payload types are unique within one SDP under BUNDLE;
    # without it a duplicate number in another section is harmless here).
    types = set()
    for line in lines:
        if line.startswith("a=rtpmap:"):
            payload_type, _, encoding = line[len("a=rtpmap:") :].partition(" ")
            if encoding.upper().startswith("H264/"):
                types.add(payload_type)
    return types


def is_loopback_candidate(candidate: str) -> bool:
    """`candidate:<foundation> <component> <proto> <priority> <address> <port> typ …`
    (with or without `a=`): True when the address is a loopback IP."""
    body = candidate.removeprefix("a=").removeprefix("candidate:")
    fields = body.split()
    if len(fields) < 8:
        return False
    try:
        return ipaddress.ip_address(fields[4]).is_loopback
    except ValueError:
        return False  # an mDNS name or garbage


def keep_loopback_candidates(sdp: str) -> str:
    kept = [
        line
        for line in sdp.splitlines()
        if not line.startswith(_CANDIDATE_PREFIX) or is_loopback_candidate(line)
    ]
    return "\r\n".join(kept) + "\r\n"
