"""Signed host agent releases, served to updating agents."""
