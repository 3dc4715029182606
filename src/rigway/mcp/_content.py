"""What the MCP tools hand the model: images and the lines of text around them.

Pure functions over SDK results, so the wording a model reads is tested without a
server. Targets are numbered from 1, as `click(index=n)` counts them.
"""

from __future__ import annotations

from mcp.types import CallToolResult, ImageContent, TextContent

from rigway.client import ActResult, ObserveResult, Screenshot

from ._structured import observation_of

__all__ = [
    "Content",
    "acted_answer",
    "acted_content",
    "image_content",
    "observe_answer",
    "observe_content",
    "observe_text",
    "text_answer",
]

Content = list[ImageContent | TextContent]


def image_content(shot: Screenshot) -> ImageContent:
    return ImageContent(type="image", data=shot.base64(), mime_type="image/jpeg")


def observe_text(result: ObserveResult) -> str:
    """The observation for the model: the window's summary, what x,y mean, and one
    numbered line per target."""
    lines = []
    if result.text is not None and result.text.summary:
        lines.append(result.text.summary)
    lines.append(
        f"image {result.width}x{result.height} of the {result.native_width}x"
        f"{result.native_height} desktop (scale {result.width / result.native_width:.3g}); "
        "click(x, y) takes pixels of this image, click(index=n) the target numbered n below"
    )
    lines.extend(result.target_lines())
    return "\n".join(lines)


def observe_content(result: ObserveResult, *, first_line: str | None = None) -> Content:
    """The image (when there is one) and the observation's text, after `first_line`."""
    content: Content = []
    shot = result.screenshot()
    if shot is not None:
        content.append(image_content(shot))
    text = observe_text(result)
    if first_line is not None:
        text = f"{first_line}\n{text}"
    content.append(TextContent(type="text", text=text))
    return content


def acted_content(done: str, result: ActResult) -> Content:
    """An acting tool's answer: what it did and how the screen settled, then the
    observation taken after (when the batch asked for one)."""
    first_line = done + result.settle_note()
    if result.observe is None:
        return [TextContent(type="text", text=first_line)]
    return observe_content(result.observe, first_line=first_line)


def observe_answer(
    result: ObserveResult, *, first_line: str | None = None, done: str | None = None
) -> CallToolResult:
    """`observe_content` plus the same observation as structured content."""
    structured = observation_of(result, done=done).model_dump(mode="json")
    return CallToolResult(
        content=list(observe_content(result, first_line=first_line)),
        structured_content=structured,
    )


def acted_answer(done: str, result: ActResult) -> CallToolResult:
    """`acted_content` plus structured content (`observed: false` without an observe)."""
    said = done + result.settle_note()
    structured = observation_of(result.observe, done=said).model_dump(mode="json")
    return CallToolResult(content=list(acted_content(done, result)), structured_content=structured)


def text_answer(text: str) -> CallToolResult:
    """A tool that acted without observing: its line, and `observed: false`."""
    structured = observation_of(None, done=text).model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )
