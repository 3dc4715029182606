"""The migrations build exactly the schema the models describe, on either store."""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.engine import Connection

from rigway.gateway.db.engine import apply_migrations, create_engine
from rigway.gateway.db.models import Base

pytestmark = pytest.mark.postgres


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_server_default": False})
    return list(compare_metadata(context, Base.metadata))


async def test_migrated_store_matches_the_models(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        await apply_migrations(engine)
        async with engine.connect() as connection:
            differences = await connection.run_sync(_differences)
    finally:
        await engine.dispose()
    assert differences == []
