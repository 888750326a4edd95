"""Use cases: decide WHEN (cache? snapshot? solve?) and call domain, store and cache."""
