"""Alembic environment: runs on the connection the gateway hands over at start."""

from alembic import context

from rigway.gateway.db.models import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
