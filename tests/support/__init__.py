"""Test helpers shared across test packages (real desktops, fakes)."""
