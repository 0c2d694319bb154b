"""Write docs/openapi.json, the OpenAPI document of the HTTP API (also served at GET /openapi.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from riverbeam.aws.http import invoke_routes, resume_routes
from riverbeam.aws.openapi import openapi_document
from riverbeam.aws.read_routes import records_routes

TARGET = Path(__file__).resolve().parents[1] / "docs" / "openapi.json"


def rendered() -> str:
    return (
        json.dumps(openapi_document([invoke_routes, resume_routes, records_routes]), indent=2, sort_keys=True)
        + "\n"
    )


def main() -> int:
    TARGET.write_text(rendered())
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
