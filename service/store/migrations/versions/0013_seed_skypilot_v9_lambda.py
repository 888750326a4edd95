"""Seed the bundled v9 Lambda file (service/data/skypilot/v9/lambda/): the current prices of
the Lambda offers 0005 seeded from the older v7 file.

Every Lambda price rose between the two catalog versions (``gpu_1x_gh200`` $1.49 -> $2.29,
``gpu_4x_h100_sxm5`` $12.36 -> $16.36); ``prices.csv`` holds the v9 price of only eleven
instance types, so until now the other v7 prices were the newest observation of their offer
and plans were costed at prices Lambda no longer asks. One catalog write: the revision moves
on (plans are re-keyed), every offer of the file is appended as a newer observation, and the
file is recorded in ``price_imports`` so importing it again (``gpuplan catalog import
--format skypilot``) inserts nothing. Downgrading leaves them: they are observations like any
imported file's, and the schema does not change.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03
"""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import op

from service.store.migrations.backfill import seed_newer_bundled_files
from service.store.skypilot_seed import V9_FILES

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    seed_newer_bundled_files(op.get_bind(), V9_FILES, datetime.now(UTC))


def downgrade() -> None:
    """Nothing to undo: 0013 changes no schema, and its observations stay (price history is
    append-only; 0012's schema holds them as any imported file's)."""
