"""Accounts and their owners."""
