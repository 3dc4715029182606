"""owner controls per rig (session modes, owner idle delay, recordings) and a session's
wish to be recorded

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("rigs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("app_mode_only", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(
            sa.Column("owner_idle_s", sa.Integer(), nullable=False, server_default="10")
        )
        batch_op.add_column(
            sa.Column("recordings_allowed", sa.Boolean(), nullable=False, server_default=sa.true())
        )
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("record", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_column("record")
    with op.batch_alter_table("rigs", schema=None) as batch_op:
        batch_op.drop_column("recordings_allowed")
        batch_op.drop_column("owner_idle_s")
        batch_op.drop_column("app_mode_only")
