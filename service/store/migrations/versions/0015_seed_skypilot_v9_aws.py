"""Seed the bundled v9 AWS file (service/data/skypilot/v9/aws/): the current prices of the AWS
GPU offers 0005 seeded from the older v7 file.

The v7 file predates AWS's June 2025 cut of its P4 and P5 prices: outside the few offers
``prices.csv`` prices from v9, a plan restricted to, say, us-east-2 was costed at $98.32/h for
a p5.48xlarge that AWS lists at $55.04/h, and every AWS spot price was a year older than the
v9 ones. One catalog write: the revision moves on (plans are re-keyed), every offer of the file
is appended as a newer observation, and the file is recorded in ``price_imports`` so importing
it again (``gpuplan catalog import --format skypilot``) inserts nothing. Downgrading leaves
them: they are observations like any imported file's, and the schema does not change.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07
"""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import op

from service.store.migrations.backfill import seed_newer_bundled_files
from service.store.skypilot_seed import V9_AWS_FILES

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    seed_newer_bundled_files(op.get_bind(), V9_AWS_FILES, datetime.now(UTC))


def downgrade() -> None:
    """Nothing to undo: 0015 changes no schema, and its observations stay (price history is
    append-only; 0012's schema holds them as any imported file's)."""
