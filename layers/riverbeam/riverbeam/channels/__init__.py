"""The approval channels (CONTRACT 16): Slack, through the same resume as every answer. Like the pipeline,
they know nothing of Lambda; riverbeam/aws/slack.py is their Lambda side, and reaches the store through
`store_of` only."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from beam_store import BeamStore

    from ..pipeline import RiverBeam


def store_of(beam: RiverBeam) -> BeamStore:
    """The store the RiverBeam holds: where the channels keep their records and read the actions."""
    return beam.store
