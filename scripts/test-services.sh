#!/usr/bin/env bash
# Print `export` lines pointing the integration tests at local Postgres and Redis when they
# answer on their default ports and no GPUPLAN_TEST_* URL is set already. Used by `make test`.
set -euo pipefail
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if [ -z "${GPUPLAN_TEST_DATABASE_URL:-}" ] && answers 5432; then
  echo "export GPUPLAN_TEST_DATABASE_URL=postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
fi
if [ -z "${GPUPLAN_TEST_REDIS_URL:-}" ] && answers 6379; then
  echo "export GPUPLAN_TEST_REDIS_URL=redis://127.0.0.1:6379/0"
fi
