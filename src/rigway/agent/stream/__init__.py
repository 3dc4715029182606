"""Live video of the desktop over WebRTC (H.264), one peer connection per viewer.

This package's root imports neither aiortc nor PyAV: the agent runs without the
`stream` extra, and then answers the stream ops with `host_error`. The publisher
(`rigway.agent.stream.publisher`) is imported only when streaming is available.
"""

from rigway.agent.stream.settings import StreamControl, StreamError, StreamSettings

__all__ = ["StreamControl", "StreamError", "StreamSettings"]
