"""Recordings of sessions started with `record: true`: every frame served, every input
batch with its receipts, the targets of each observe, with timings (docs/api.md)."""
