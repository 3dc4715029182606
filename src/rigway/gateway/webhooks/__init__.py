"""Webhooks: SSRF-guarded target checks, signing and delivery of session events."""
