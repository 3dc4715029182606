"""Shared field types for request bodies."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator


def _without_nul(value: str) -> str:
    # PostgreSQL text cannot hold NUL; refuse it at the edge instead of failing in SQL.
    if "\x00" in value:
        raise ValueError("text must not contain NUL characters")
    return value


StoredText = Annotated[str, AfterValidator(_without_nul)]
