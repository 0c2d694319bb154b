"""`bump_version`: the next version of a semantic version, a tool that changes nothing and so asks for no
approval (a tool that acts would be `@tool(confirm_required=True)`)."""

import re
from typing import Literal

from riverbeam import ToolError, tool

_SEMVER = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


@tool
def bump_version(version: str, part: Literal["major", "minor", "patch"] = "patch") -> dict[str, str]:
    """The version after `version` (MAJOR.MINOR.PATCH, a leading v kept) when `part` is bumped."""
    found = _SEMVER.fullmatch(version.strip())
    if found is None:
        raise ToolError("BEM-332", f"bump_version: {version!r} is not MAJOR.MINOR.PATCH")
    major, minor, patch = (int(n) for n in found.groups())
    bumped = {"major": (major + 1, 0, 0), "minor": (major, minor + 1, 0), "patch": (major, minor, patch + 1)}
    prefix = "v" if version.strip().startswith("v") else ""
    return {"version": version, "next": prefix + ".".join(str(n) for n in bumped[part])}
