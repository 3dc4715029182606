"""Rigs: paired machines, their API access switch and pairing."""
