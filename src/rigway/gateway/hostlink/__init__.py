"""The gateway end of the host link: one WebSocket per connected rig."""
