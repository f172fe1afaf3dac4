"""The stack preflight checks for: its parameters and, once deployed, its outputs.

After ``sam deploy`` both come from CloudFormation (DescribeStacks). Before, the parameters are what
``sam deploy`` would send: the template's defaults (template.yaml), then samconfig.toml's
``parameter_overrides``, then ``--parameter-overrides``; there are no outputs yet.
"""

from __future__ import annotations

import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


class StackError(Exception):
    """The stack's configuration cannot be read; the message says why and what to do."""


@dataclass(frozen=True)
class StackConfig:
    name: str
    region: str
    parameters: dict[str, str]
    outputs: dict[str, str] = field(default_factory=dict)
    deployed: bool = False
    #: Before the first deploy: the parameters given (samconfig.toml, --parameter-overrides), which every
    #: ``sam deploy`` preflight prints must send too: there is no previous value to fall back on.
    given: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> str:
        return self.parameters.get(name, "")

    def listed(self, name: str) -> list[str]:
        return [item.strip() for item in self.get(name).split(",") if item.strip()]

    @property
    def cluster(self) -> str:
        return self.get("ClusterName")

    @property
    def namespace(self) -> str:
        return self.get("Namespace") or "ml-training"

    @property
    def kinds(self) -> str:
        return self.get("AllowedKinds") or "PyTorchJob"

    @property
    def mode(self) -> str:
        return self.get("CompletionMode") or "poll"

    @property
    def group(self) -> str:
        return self.get("KubernetesGroup") or "jobsync"

    @property
    def subnets(self) -> list[str]:
        return self.listed("SubnetIds")

    @property
    def security_groups(self) -> list[str]:
        return self.listed("SecurityGroupIds")

    @property
    def creates_access_entry(self) -> bool:
        return self.get("CreateAccessEntry") != "false"

    @property
    def role_arn(self) -> str | None:
        return self.outputs.get("ClusterAccessRoleArn")

    def overrides(self, **changes: str) -> str:
        """The ``sam deploy`` that sets ``changes`` on this stack (a deployed stack keeps its other values)."""
        merged = changes if self.deployed else {**self.given, **changes}
        pairs = " ".join(f"{key}={shlex.quote(value)}" for key, value in merged.items())
        return f"{self.redeploy(plain=True)} --parameter-overrides {pairs}"

    def redeploy(self, plain: bool = False) -> str:
        """``sam deploy`` of this stack as it is configured."""
        command = f"sam deploy --stack-name {self.name} --region {self.region}"
        if plain or self.deployed or not self.given:
            return command
        return self.overrides()


def from_cloudformation(cfn: Any, name: str, region: str) -> StackConfig | None:
    """The deployed stack, or None when CloudFormation has none of that name."""
    from botocore.exceptions import ClientError

    try:
        (stack,) = cfn.describe_stacks(StackName=name)["Stacks"]
    except ClientError as err:
        error = err.response.get("Error", {})
        if error.get("Code") == "ValidationError" and "does not exist" in error.get("Message", ""):
            return None
        raise
    parameters = {p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters") or []}
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs") or []}
    return StackConfig(name, region, parameters, outputs, deployed=True)


class _IgnoreTags(yaml.SafeLoader):
    """template.yaml's short tags (!Ref, !Sub, ...) read as nothing: only the Parameters are wanted."""


_IgnoreTags.add_multi_constructor("!", lambda loader, suffix, node: None)


def from_files(
    name: str,
    region: str,
    template: Path,
    samconfig: Path | None = None,
    config_env: str = "default",
    overrides: str = "",
) -> StackConfig:
    """The parameters ``sam deploy`` would send for a stack not deployed yet."""
    if not template.is_file():
        raise StackError(
            f"stack {name} is not deployed in {region} and {template} does not exist: run from the repository "
            "(where template.yaml is), or give --template"
        )
    try:
        document = yaml.load(template.read_text(), Loader=_IgnoreTags)
        declared = document["Parameters"]
    except (yaml.YAMLError, KeyError, TypeError) as err:
        raise StackError(f"{template} is not a SAM template with Parameters: {err}") from None
    given = _samconfig_overrides(samconfig, config_env) if samconfig is not None and samconfig.is_file() else {}
    given.update(parse_overrides(overrides))
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise StackError(f"{', '.join(unknown)}: not a parameter of {template}")
    parameters = {key: str(spec.get("Default", "")) for key, spec in declared.items()} | given
    return StackConfig(name, region, parameters, given=given)


def parse_overrides(text: str | list[str]) -> dict[str, str]:
    """``Key=Value Key2="a b"`` (or a list of them) as ``sam deploy --parameter-overrides`` reads it."""
    items = text if isinstance(text, list) else shlex.split(text)
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise StackError(f"parameter override {item!r} is not Key=Value")
        out[key] = value
    return out


def _samconfig_overrides(path: Path, env: str) -> dict[str, str]:
    try:
        config = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise StackError(f"{path}: {err}") from None
    deploy = ((config.get(env) or {}).get("deploy") or {}).get("parameters") or {}
    value = deploy.get("parameter_overrides", "")
    return parse_overrides(value) if value else {}
