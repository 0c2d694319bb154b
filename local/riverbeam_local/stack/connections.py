"""The open WebSocket connections, by API Gateway connection id: what the management API posts to."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from starlette.websockets import WebSocket, WebSocketState

from ..lambda_like import Connection

log = logging.getLogger("riverbeam_local")


@dataclass
class Live:
    info: Connection
    websocket: WebSocket
    last_active_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    # a route's answer and a management API post may both send at once
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    closed: bool = False

    async def send(self, data: bytes | str) -> bool:
        """Send one message; False if the connection is gone (closed, or the send failed)."""
        async with self.lock:
            if self.closed or self.websocket.application_state != WebSocketState.CONNECTED:
                return False
            try:
                if isinstance(data, bytes):
                    try:
                        await self.websocket.send_text(data.decode())
                    except UnicodeDecodeError:
                        await self.websocket.send_bytes(data)
                else:
                    await self.websocket.send_text(data)
            except Exception as error:  # the peer went away between the check and the send
                log.debug("send to %s failed: %r", self.info.connection_id, error)
                self.closed = True
                return False
            self.last_active_ms = int(time.time() * 1000)
            return True

    async def close(self) -> None:
        async with self.lock:
            if not self.closed:
                self.closed = True
                try:
                    await self.websocket.close(1000)
                except Exception as error:  # already closing from the other side
                    log.debug("close of %s: %r", self.info.connection_id, error)


class Registry:
    def __init__(self) -> None:
        self._live: dict[str, Live] = {}

    def add(self, live: Live) -> None:
        self._live[live.info.connection_id] = live

    def remove(self, connection_id: str) -> None:
        self._live.pop(connection_id, None)

    def get(self, connection_id: str) -> Live | None:
        live = self._live.get(connection_id)
        return None if live is None or live.closed else live
