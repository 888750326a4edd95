"""The app under a real uvicorn server on a free loopback port, in a background thread, so tests
can send truly concurrent requests (Litestar's test client runs one request at a time)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from litestar import Litestar


@contextmanager
def live_server(app: Litestar) -> Iterator[str]:
    """Serve ``app`` (lifespan included) and yield its base URL; stop it on exit."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, lifespan="on", log_config=None, access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
