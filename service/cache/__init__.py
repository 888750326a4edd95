"""Plan cache: Redis when configured, a bounded in-process LRU otherwise (same Protocol)."""
