"""template.yaml as CloudFormation receives it: packaged as `sam package` leaves it, SAM's transform applied
for each AuthMode, and then no cfn-lint error and no warning that is not explained
(scripts/check_transformed.py, which scripts/sam_check runs too). cfn-lint on the SAM template alone
passed a stack that CloudFormation refuses to create; these tests fail on that template."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.transformed import auth_modes, checker, parameters, transformed

# the Bedrock statement as it was when the stack could not be created: a function as Fn::Join's delimiter
DELIMITER_FROM_A_FUNCTION = {
    "Fn::Split": [
        ",",
        {
            "Fn::Join": [
                {"Fn::Sub": ",arn:aws:bedrock:*:${AWS::AccountId}:inference-profile/"},
                {"Ref": "BedrockModelIds"},
            ]
        },
    ]
}


def _findings(template: dict[str, Any], auth_mode: str = "jwt") -> list[str]:
    """What fails the check for this (source) template: '<rule> <path>' of each finding."""
    params = parameters(auth_mode)
    matches = checker.findings(checker.transform(checker.packaged(template), params), params)
    return [checker.describe(m) for m in checker.unaccepted(matches)]


def _statement(template: dict[str, Any], function: str, sid: str) -> dict[str, Any]:
    statements = template["Resources"][function]["Properties"]["Policies"][0]["Statement"]
    (found,) = [s for s in statements if s.get("Sid") == sid]
    return found  # type: ignore[no-any-return]


@pytest.mark.parametrize("auth_mode", auth_modes())
def test_the_transformed_template_has_no_error_and_no_unexplained_warning(auth_mode: str) -> None:
    params = parameters(auth_mode)
    result = transformed(auth_mode)
    assert not [k for k, r in result["Resources"].items() if r["Type"].startswith("AWS::Serverless::")]
    matches = checker.findings(result, params)
    assert not checker.unaccepted(matches), [checker.describe(m) for m in checker.unaccepted(matches)]


def test_every_code_location_is_an_s3_object_as_after_sam_package() -> None:
    source = checker.read_template()
    kinds = {"AWS::Serverless::Function": "AWS::Lambda::Function"}
    kinds["AWS::Serverless::LayerVersion"] = "AWS::Lambda::LayerVersion"
    result = transformed("jwt")["Resources"]
    for sam_kind, kind in kinds.items():
        made = [r["Properties"] for r in result.values() if r["Type"] == kind]
        assert len(made) == sum(r["Type"] == sam_kind for r in source["Resources"].values()) > 0
        for props in made:
            code = props["Code"] if "Code" in props else props["Content"]
            assert code["S3Bucket"] == checker.BUCKET and code["S3Key"].endswith(".zip"), code


def test_a_function_as_a_join_delimiter_fails_the_check() -> None:
    broken = checker.read_template()
    _statement(broken, "WorkerFunction", "InvokeConfiguredModels")["Resource"] = DELIMITER_FROM_A_FUNCTION
    found = _findings(broken)
    assert len(found) == 1 and found[0].startswith(
        "E1018 Resources/WorkerFunctionRole/Properties/Policies/0/"
    )


def test_an_action_iam_does_not_have_fails_the_check() -> None:
    broken = checker.read_template()
    _statement(broken, "InvokeFunction", "TableReadWrite")["Action"].append("dynamodb:TransactWriteItems")
    found = _findings(broken, "none")
    assert len(found) == 1 and found[0].startswith("W3037 Resources/InvokeFunctionRole/"), found
    assert "transactwriteitems" in found[0]


def test_a_template_the_transform_refuses_fails_the_check(tmp_path: Path, capsys: Any) -> None:
    source = checker.read_template()
    broken = copy.deepcopy(source)
    # a SAM event without its required property
    broken["Resources"]["SweepFunction"]["Properties"]["Events"]["Sweep"]["Properties"].pop("Schedule")
    path = tmp_path / "template.json"
    path.write_text(json.dumps(broken))
    assert checker.main(["--template", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.count("SAM's transform refuses the template") == len(auth_modes())
    assert "Schedule" in out


def test_the_command_writes_each_transformed_template_and_passes(tmp_path: Path, capsys: Any) -> None:
    assert checker.main(["--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for mode in auth_modes():
        assert f"AuthMode={mode}: " in out
        written = json.loads((tmp_path / f"transformed-{mode}.json").read_text())
        assert written == transformed(mode)
    assert out.count(" 0 findings") == len(auth_modes())
