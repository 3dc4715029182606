"""The body limit of an input batch, derived from the batch's own bounds.

The gateway's general limit (64 KiB) is far below what the contract lets an input batch
be: 100 `type_text` events of 10,000 characters of any Unicode each. The input route
gets a limit of its own, large enough for every batch the schema accepts however its
JSON is written (escaped or not), and no larger.
"""

from __future__ import annotations

from rigway.gateway.desktop.schemas import MAX_TEXT_CHARS, InputBatchIn

# The longest JSON spelling of one character (Python counts code points): a code point
# past U+FFFF escaped as a surrogate pair, `\ud83d\ude00`, as json.dumps writes an emoji.
# A BMP character escaped takes 6 bytes, and unescaped UTF-8 at most 4.
MAX_JSON_BYTES_PER_CHAR = 12
# A type_text event without its text, with every field it may carry:
# `{"type": "type_text", "text": "", "delay_ms": 5000, "expect": "change",
# "expect_timeout_ms": 5000}` is 98 bytes as json.dumps writes it, and 368 with every
# character of its names and words escaped (`\u0074` for "t"); the rest is room for
# separators and indentation. No other event comes near a type_text event of full
# length (a key name is at most 64 characters, a pointer event a few numbers and a
# target id), so this event bounds them all.
EVENT_OVERHEAD_BYTES = 512
# `{"events": [` ... `]}` around the events, with the batch's own fields at their
# longest (a frame id, coords, require_unchanged, settle, an observe with every
# parameter): 312 bytes as json.dumps writes them, 1147 with every character escaped,
# and room for whitespace.
ENVELOPE_BYTES = 2048


def max_input_events() -> int:
    """The batch's event bound as the schema declares it, so the limit follows it."""
    for constraint in InputBatchIn.model_fields["events"].metadata:
        bound = getattr(constraint, "max_length", None)  # pydantic's MaxLen
        if isinstance(bound, int):
            return bound
    raise RuntimeError("InputBatchIn.events declares no max_length")


def input_batch_max_bytes() -> int:
    """The largest body a valid input batch can need, in bytes."""
    per_event = MAX_TEXT_CHARS * MAX_JSON_BYTES_PER_CHAR + EVENT_OVERHEAD_BYTES
    return max_input_events() * per_event + ENVELOPE_BYTES


def input_body_limit(general_max_bytes: int) -> int:
    """The input route's limit: what a valid batch can need, or the general limit
    (`max_body_bytes`) when an operator set that higher still."""
    return max(general_max_bytes, input_batch_max_bytes())
