"""The gateway's SQL lives in each feature's repository.py: a service opens the
transaction and applies the rules; it may add a new row or fetch one by primary key
(`db.add`, `db.get`, the unit of work), but builds no query statement itself."""

from __future__ import annotations

import ast
from pathlib import Path

GATEWAY = Path(__file__).resolve().parents[2] / "src" / "rigway" / "gateway"
QUERY_BUILDERS = {"select", "insert", "update", "delete", "func", "text"}
# The store's own package (engine, models, migrations) and the readiness probe's
# `SELECT 1`, which asks whether the store answers, not for any feature's data.
ALLOWED_OUTSIDE_REPOSITORIES = {"health_and_metrics.py"}


def _query_builders_imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module is not None
        and node.module.split(".")[0] == "sqlalchemy"
        for alias in node.names
        if alias.name in QUERY_BUILDERS
    }


def test_query_statements_outside_repositories_none() -> None:
    offenders = {
        str(path.relative_to(GATEWAY)): sorted(names)
        for path in sorted(GATEWAY.rglob("*.py"))
        if path.name != "repository.py"
        and path.relative_to(GATEWAY).parts[0] != "db"
        and str(path.relative_to(GATEWAY)) not in ALLOWED_OUTSIDE_REPOSITORIES
        and (names := _query_builders_imported(path))
    }
    assert offenders == {}
