"""Live video of a session's desktop: viewer credentials, WebRTC signaling relayed to
the rig's agent over the host link, and a viewer page (docs/stream.md)."""
