"""The pipeline that records every invocation, pauses for approvals and resumes: `RiverBeam` (beam.py)
over one module per stage of a step, in the order a request meets them (beam.py lists them)."""

from .beam import RiverBeam
from .frames import FrameSink
from .setup import DEFAULT_COALESCE_SECONDS, DEFAULT_FRAME_TTL_SECONDS, DEFAULT_LEASE_SECONDS

__all__ = [
    "DEFAULT_COALESCE_SECONDS",
    "DEFAULT_FRAME_TTL_SECONDS",
    "DEFAULT_LEASE_SECONDS",
    "FrameSink",
    "RiverBeam",
]
