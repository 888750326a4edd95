"""How a solved plan is stored in the plan cache: msgpack of the domain value, versioned.

A cache entry is the msgpack array ``[FORMAT_VERSION, SolvedPlan]``: the plan id, catalog
revision, canonical request and the domain ``Plan``, not a rendering of it (JSON, text and
flat renderings are made at the HTTP and CLI edges). An entry of another format version, or one
that does not decode, reads as a miss. New fields of the domain values need defaults, so
entries written before they existed still decode; anything else bumps ``FORMAT_VERSION``,
which also moves the keys (``plans:v{FORMAT_VERSION}:{plan_id}``) so processes of two versions
sharing one Redis never read each other's entries.
"""

from __future__ import annotations

import msgspec

from service.domain.planner import SolvedPlan

FORMAT_VERSION = 2
"""1 stored the JSON body of the response; 2 stores the domain value."""


def plan_key(plan_id: str) -> str:
    """The cache key of plan ``plan_id``."""
    return f"plans:v{FORMAT_VERSION}:{plan_id}"


class PlanCodec:
    """Encoder and decoders built once and reused (msgspec keeps per-type state in them)."""

    def __init__(self, version: int = FORMAT_VERSION) -> None:
        self.version = version
        self._encoder = msgspec.msgpack.Encoder()
        self._envelope = msgspec.msgpack.Decoder(tuple[int, msgspec.Raw])
        self._value = msgspec.msgpack.Decoder(SolvedPlan)

    def encode(self, solved: SolvedPlan) -> bytes:
        return self._encoder.encode((self.version, solved))

    def decode(self, raw: bytes) -> SolvedPlan | None:
        """The stored plan, or ``None`` for an entry of another version or not decodable."""
        try:
            version, body = self._envelope.decode(raw)
            if version != self.version:
                return None
            return self._value.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
