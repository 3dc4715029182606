"""Tests of the x11 backend against real GTK apps under Xvfb."""
