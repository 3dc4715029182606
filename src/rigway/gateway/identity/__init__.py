"""The embedded identity provider for single-machine deployments: keys, tokens, passwords."""
