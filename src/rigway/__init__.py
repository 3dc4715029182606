"""Rigway: see and drive real desktops over a REST API."""

__version__ = "0.1.0"
