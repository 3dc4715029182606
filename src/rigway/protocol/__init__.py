"""The gateway ⇄ host agent wire protocol: message shapes, framing and key names.

This package imports nothing else of Rigway's, so the gateway and the agent can both
depend on it without depending on each other. See docs/protocol.md.
"""

from rigway.protocol.framing import decode_frame, encode_binary, encode_text
from rigway.protocol.messages import (
    FEATURE_SCREEN_PARTS,
    PROTOCOL_VERSION,
    Hello,
    Part,
    Ping,
    Pong,
    Reply,
    Request,
    Welcome,
)

__all__ = [
    "FEATURE_SCREEN_PARTS",
    "PROTOCOL_VERSION",
    "Hello",
    "Part",
    "Ping",
    "Pong",
    "Reply",
    "Request",
    "Welcome",
    "decode_frame",
    "encode_binary",
    "encode_text",
]
