"""sessions: the owner epoch that fences timer-driven ends across gateway nodes, and
since when no node has held the session's host link

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("owner_epoch", sa.Integer(), nullable=False, server_default="0")
        )
        batch_op.add_column(
            sa.Column("host_absent_since", sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_column("host_absent_since")
        batch_op.drop_column("owner_epoch")
