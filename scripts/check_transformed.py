"""Check template.yaml as CloudFormation receives it: SAM's transform applied, then cfn-lint on the result.

cfn-lint on the SAM template itself does not apply the transform (it merges the Globals and checks the SAM
resources against SAM's own schemas), so what the transform passes through to CloudFormation untouched, such
as a function's inline policy statements, is barely checked there. This script does what a deploy does:
- the code locations are replaced as `sam package` replaces them, by S3 URIs (s3://BUCKET/<logical id>.zip);
- SAM's transform (aws-sam-translator, the library CloudFormation's own transform is built from) runs with
  the deployment's parameter values, once for each value of the `AuthMode` parameter;
- cfn-lint checks each result. Any error fails the check, and so does any warning not listed in EXPLAINED
  with the reason it is accepted.

    python scripts/check_transformed.py [--template template.yaml] [--out DIR]

--out writes each transformed template to DIR/transformed-<AuthMode>.json. Needs the dev extra's
aws-sam-translator and cfn-lint (.venv); no AWS account, no network. Exit 0: clean; 1: findings.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import boto3
from cfnlint.api import ManualArgs, lint
from cfnlint.context.parameters import ParameterSet
from cfnlint.decode import cfn_yaml
from cfnlint.match import Match
from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator
from samtranslator.utils.py27hash_fix import to_py27_compatible_template, undo_mark_unicode_str_in_template

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"

# where the transform and the checks place the stack: any commercial region does
REGION = "us-east-1"
ACCOUNT = "123456789012"
STACK = "riverbeam"
BUCKET = "riverbeam-artifacts"

# the resource properties that name a local folder, which `sam package` zips and uploads
PACKAGED = {"AWS::Serverless::Function": "CodeUri", "AWS::Serverless::LayerVersion": "ContentUri"}

# AuthMode jwt needs an issuer and an audience (the template's Rules): a deployment's values, not real ones
JWT_PARAMETERS = {
    "JwtIssuer": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_example",
    "JwtAudience": "example-client-id",
}

# cfn-lint warnings accepted on the transformed template, by rule id, with the reason (none so far)
EXPLAINED: dict[str, str] = {}


def read_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """The template as plain JSON data (cfn-lint's YAML reader: the short tags in their long form)."""
    return json.loads(json.dumps(cfn_yaml.load(str(path))))  # type: ignore[no-any-return]


def packaged(template: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the template whose local code folders are S3 URIs, as after `sam package`."""
    result = copy.deepcopy(dict(template))
    for name, resource in result.get("Resources", {}).items():
        prop = PACKAGED.get(resource.get("Type", ""))
        location = resource.get("Properties", {}).get(prop) if prop else None
        if isinstance(location, str) and not location.startswith("s3://"):
            resource["Properties"][prop] = f"s3://{BUCKET}/{name}.zip"
    return result


def auth_modes(template: Mapping[str, Any]) -> list[str]:
    return list(template["Parameters"]["AuthMode"]["AllowedValues"])


def deployment_parameters(auth_mode: str, **overrides: str) -> dict[str, str]:
    """The parameter values of a deployment with this AuthMode (the rest at their defaults)."""
    return {"AuthMode": auth_mode, **(JWT_PARAMETERS if auth_mode == "jwt" else {}), **overrides}


def transform(template: Mapping[str, Any], parameters: Mapping[str, str]) -> dict[str, Any]:
    """SAM's transform of the template, as CloudFormation applies it for these parameter values."""
    document = copy.deepcopy(dict(template))
    values: dict[str, Any] = {"AWS::AccountId": ACCOUNT, "AWS::StackName": STACK, **parameters}
    # what samtranslator.translator.transform.transform does, with a region of our own rather than the
    # environment's, and no IAM look-ups (SAM's bundled map names the managed policies)
    to_py27_compatible_template(document, values)
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=REGION))
    result = translator.translate(document, parameter_values=values, get_managed_policy_map=dict)
    translator.metrics.publish()  # to its dummy publisher: else it warns when collected
    return undo_mark_unicode_str_in_template(result)  # type: ignore[no-any-return]


def findings(transformed: Mapping[str, Any], parameters: Mapping[str, str]) -> list[Match]:
    """cfn-lint's errors and warnings on a transformed template (informational matches left out)."""
    config = ManualArgs(regions=[REGION], parameters=[ParameterSet("deployment", dict(parameters))])
    matches = lint(json.dumps(transformed, indent=1), config=config)
    return [m for m in matches if m.rule.id[0] in "EW"]


def unaccepted(matches: Sequence[Match]) -> list[Match]:
    """The findings that fail the check: every error, and the warnings EXPLAINED does not accept."""
    return [m for m in matches if m.rule.id.startswith("E") or m.rule.id not in EXPLAINED]


def describe(match: Match, limit: int = 300) -> str:
    """One line: the rule, where in the template, and the message (cut: some list every valid value)."""
    path = "/".join(str(p) for p in getattr(match, "path", None) or [])
    message = match.message if len(match.message) <= limit else match.message[:limit] + "..."
    return f"{match.rule.id} {path}: {message}"


def check(template_path: Path, out: Path | None) -> int:
    template = packaged(read_template(template_path))
    failed = 0
    for mode in auth_modes(template):
        parameters = deployment_parameters(mode)
        try:
            transformed = transform(template, parameters)
        except InvalidDocumentException as refused:
            failed += 1
            print(f"AuthMode={mode}: SAM's transform refuses the template")
            for cause in refused.causes:
                print(f"  {cause.message}")
            continue
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / f"transformed-{mode}.json").write_text(json.dumps(transformed, indent=1) + "\n")
        matches = findings(transformed, parameters)
        bad = unaccepted(matches)
        failed += len(bad)
        print(f"AuthMode={mode}: {len(transformed['Resources'])} resources, {len(bad)} findings")
        for match in matches:
            reason = "" if match in bad else f" (accepted: {EXPLAINED[match.rule.id]})"
            print(f"  {describe(match)}{reason}")
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--template", type=Path, default=TEMPLATE)
    parser.add_argument("--out", type=Path, help="write each transformed template here")
    args = parser.parse_args(argv)
    return check(args.template, args.out)


if __name__ == "__main__":
    sys.exit(main())
