"""Sessions: the metered state machine between a caller and a rig."""
