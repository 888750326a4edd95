"""Persistence: Postgres (or embedded SQLite) rows, migrations and repositories.

ORM rows stay inside this package; repositories return domain values.
"""
