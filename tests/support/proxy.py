"""A TCP proxy on loopback that a test can cut, freeze and restore, to take a real dependency
(Postgres, Redis) away from the service under test without stopping the shared server: ``cut``
refuses connections (a server that is down), ``freeze`` accepts them and answers nothing (a
server that hangs).

The proxy runs its own event loop in a thread: Litestar's test client runs the app on another
thread and loop, so a proxy on the test's loop would stall whenever the test waits on a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

T = TypeVar("T")


class ToggleProxy:
    """Thread-hosted proxy; ``start``/``cut``/``restore``/``close`` are awaitable from any loop."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._inner = _LoopProxy(target_host, target_port)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    @classmethod
    def for_url(cls, url: str) -> ToggleProxy:
        parts = urlsplit(url)
        return cls(parts.hostname or "127.0.0.1", parts.port or _default_port(parts.scheme))

    @property
    def port(self) -> int:
        return self._inner.port

    def url(self, original: str) -> str:
        return self._inner.url(original)

    async def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return await asyncio.wrap_future(future)

    async def start(self) -> None:
        await self._call(self._inner.start())

    async def cut(self) -> None:
        await self._call(self._inner.cut())

    async def restore(self) -> None:
        await self._call(self._inner.restore())

    async def freeze(self) -> None:
        await self._call(self._inner.freeze())

    async def close(self) -> None:
        await self._call(self._inner.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


class _LoopProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._frozen = False
        self.port = 0

    def url(self, original: str) -> str:
        """``original`` with its host and port replaced by this proxy's."""
        parts = urlsplit(original)
        auth = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        return urlunsplit(parts._replace(netloc=f"{auth}127.0.0.1:{self.port}"))

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        """Refuse new connections and drop every open one (the dependency is 'down')."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        self._drop_connections()
        await asyncio.sleep(0)

    def _drop_connections(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        for task in list(self._tasks):
            task.cancel()

    async def restore(self) -> None:
        """Forward again; after a freeze, the connections it held are dropped first."""
        if self._frozen:
            self._frozen = False
            self._drop_connections()
        if self._server is None:
            await self.start()

    async def freeze(self) -> None:
        """Keep accepting connections but forward nothing either way (a hung server)."""
        self._frozen = True

    async def close(self) -> None:
        await self.cut()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._frozen:
            self._writers.add(writer)  # held open, never answered, dropped on restore
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update({writer, up_writer})
        pumps = [
            asyncio.create_task(self._pump(reader, up_writer)),
            asyncio.create_task(self._pump(up_reader, writer)),
        ]
        self._tasks.update(pumps)
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*pumps, return_exceptions=True)
        finally:
            for task in pumps:
                self._tasks.discard(task)
            for w in (writer, up_writer):
                self._writers.discard(w)
                w.transport.abort()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError, ConnectionError):
            while data := await reader.read(65536):
                if self._frozen:
                    continue  # swallowed: the other side waits for an answer that never comes
                writer.write(data)
                await writer.drain()
        writer.transport.abort()


def _default_port(scheme: str) -> int:
    return 6379 if scheme.startswith("redis") else 5432
