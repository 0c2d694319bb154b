"""What a policy decides for one proposed tool call (CONTRACT 10); no Cedar here, so the pipeline can
read a decision without importing cedarpy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Effect = Literal["allow", "ask", "deny"]


@dataclass(frozen=True)
class Decision:
    """`effect`: `allow` runs the call unasked, `ask` waits for a person, `deny` never runs it;
    `policy_ids`: the `@id`s of the policies that made it (Cedar's own ids where none is given)."""

    effect: Effect
    policy_ids: tuple[str, ...] = ()
