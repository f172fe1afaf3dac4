"""Translate template.yaml (SAM) into the plain CloudFormation that checkov scans.

checkov reads AWS::Serverless::* resources but not what SAM generates from them: the
EventBridge rule, the EventInvokeConfig, the state machine, the roles SAM makes. So
`make scan` translates first, with aws-sam-translator, the library `sam validate` and
cfn-lint use. `sam validate` writes nothing and `sam package` needs a bucket, so local
paths are stood in for here: code locations become a placeholder S3 object (checkov
does not read code), and the state machine's DefinitionUri is read into Definition, so
checkov sees the real definition. No AWS call is made: the region is fixed and the
managed-policy map is the one the translator ships.

Usage: python tools/scan/sam_translate.py template.yaml build/scan/template.json
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import boto3
from samtranslator.internal.managed_policies import get_bundled_managed_policy_map
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator
from samtranslator.yaml_helper import yaml_parse

REGION = "us-east-1"
PLACEHOLDER_CODE = {"Bucket": "jobsync-scan-placeholder", "Key": "code.zip"}


def _inline_local_paths(template: dict[str, Any], base: Path) -> None:
    for resource in template.get("Resources", {}).values():
        kind = resource.get("Type")
        props = resource.setdefault("Properties", {})
        if kind == "AWS::Serverless::Function" and isinstance(props.get("CodeUri"), str):
            props["CodeUri"] = dict(PLACEHOLDER_CODE)
        elif kind == "AWS::Serverless::LayerVersion" and isinstance(props.get("ContentUri"), str):
            props["ContentUri"] = dict(PLACEHOLDER_CODE)
        elif kind == "AWS::Serverless::StateMachine" and isinstance(props.get("DefinitionUri"), str):
            props["Definition"] = json.loads((base / props.pop("DefinitionUri")).read_text())


def translate(template_path: Path) -> dict[str, Any]:
    template = yaml_parse(template_path.read_text())
    _inline_local_paths(template, template_path.parent)
    session = boto3.session.Session(region_name=REGION)
    translator = Translator(None, Parser(), boto_session=session)
    return translator.translate(
        template,
        parameter_values={},
        get_managed_policy_map=lambda: get_bundled_managed_policy_map("aws") or {},
    )


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    source, target = Path(argv[1]), Path(argv[2])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(translate(source), indent=2, sort_keys=True) + "\n")
    print(f"{source} -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
