"""The SQL store: models, engine and Alembic migrations."""
