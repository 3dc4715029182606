"""API key management (console token)."""
