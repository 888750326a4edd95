"""``configure_logging``: one JSON object per line on stderr, Python warnings included."""

from __future__ import annotations

import io
import json
import logging
import warnings
from collections.abc import Iterator

import pytest

from service.observability.logging import configure_logging


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        logging.captureWarnings(False)
        root.handlers[:] = handlers
        root.setLevel(level)


@pytest.mark.usefixtures("restored_logging")
def test_a_library_warning_is_a_json_log_line_not_a_bare_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stderr = io.StringIO()
    monkeypatch.setattr("sys.stderr", stderr)  # in the test: capture resets it between phases
    configure_logging("INFO", "json")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("overflow encountered in divide", RuntimeWarning, stacklevel=1)
    logging.getLogger("gpuplan.test").info("after", extra={"event": "x"})
    entries = [json.loads(line) for line in stderr.getvalue().splitlines()]
    assert len(entries) == 2
    assert entries[0]["level"] == "warning" and entries[0]["logger"] == "py.warnings"
    assert "overflow encountered in divide" in entries[0]["msg"]
    assert entries[1]["event"] == "x"
