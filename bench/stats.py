"""Small statistics helpers for the benchmarks: median and p95 in milliseconds."""

from __future__ import annotations

import statistics


def p50(samples_ms: list[float]) -> float:
    return statistics.median(samples_ms)


def p95(samples_ms: list[float]) -> float:
    ordered = sorted(samples_ms)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def row(label: str, samples_ms: list[float]) -> str:
    return (
        f"{label:<44} p50 {p50(samples_ms):7.2f} ms   "
        f"p95 {p95(samples_ms):7.2f} ms   n={len(samples_ms)}"
    )
