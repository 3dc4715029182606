"""The gateway ⇄ host agent wire protocol: message shapes, framing and key names.

This package imports nothing else of Rigway's, so the gateway and the agent can both
depend on it without depending on each other. See docs/protocol.md.
"""

from rigway.protocol.framing import decode_frame, encode_binary, encode_text
from rigway.protocol.messages import (
    PROTOCOL_VERSION,
    Hello,
    Note,
    Ping,
    Pong,
    Reply,
    Request,
    Welcome,
)

__all__ = [
    "PROTOCOL_VERSION",
    "Hello",
    "Note",
    "Ping",
    "Pong",
    "Reply",
    "Request",
    "Welcome",
    "decode_frame",
    "encode_binary",
    "encode_text",
]
