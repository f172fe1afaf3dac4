"""Run an ``aws ...`` command line that jobsync prints (a preflight fix, a doc's step) against boto3: moto and
the stand-in in the tests. The command's options are matched to the operation's input members through
botocore's service model, as the AWS CLI does (``--kubernetes-groups a b`` is the list kubernetesGroups,
``--access-config authenticationMode=API`` the structure accessConfig, ``--private-dns-enabled`` a
boolean), so an option the API does not have fails the test instead of passing silently.
"""

from __future__ import annotations

import shlex
from typing import Any

import boto3
from botocore import xform_name

# The AWS CLI's own shortcuts for one command: --protocol/--port/--source-group of authorize-security-group-ingress.
_SG_SHORTCUTS = {"protocol", "port", "source-group"}


#: Options of the AWS CLI itself, on every command.
GLOBAL_OPTIONS = {"region", "query", "output", "profile", "endpoint-url", "no-cli-pager"}


def parse(command: str | list[str]) -> tuple[Any, Any, dict[str, Any], dict[str, list[str]]]:
    """(client, operation model, API parameters, global options) of an ``aws SERVICE COMMAND ...`` line.

    ``ValueError`` for a command or an option the service does not have, or a required member missing.
    """
    words = shlex.split(command.split("  #", 1)[0]) if isinstance(command, str) else list(command)
    if words[:1] != ["aws"] or len(words) < 3:
        raise ValueError(f"not an aws command: {command}")
    service, operation, rest = words[1], words[2], words[3:]
    options = _options(rest)
    globals_ = {key: options.pop(key) for key in list(options) if key in GLOBAL_OPTIONS}
    region = (globals_.get("region") or ["us-east-1"])[0]
    client = boto3.client(service, region_name=region if region.startswith(("us-", "eu-", "ap-")) else "us-east-1")
    model = client.meta.service_model.operation_model(_operation_name(client, operation))
    members = model.input_shape.members if model.input_shape else {}
    by_cli_name = {xform_name(name, "-"): name for name in members}
    params: dict[str, Any] = {}
    if service == "ec2" and operation == "authorize-security-group-ingress" and _SG_SHORTCUTS & set(options):
        port = options.pop("port")[0]
        pair = {"GroupId": options.pop("source-group")[0]}
        protocol = options.pop("protocol")[0]
        params["IpPermissions"] = [
            {"IpProtocol": protocol, "FromPort": _int(port), "ToPort": _int(port), "UserIdGroupPairs": [pair]}
        ]
    for option, values in options.items():
        negated = option.startswith("no-") and option[3:] in by_cli_name
        name = by_cli_name.get(option[3:] if negated else option)
        if name is None:
            raise ValueError(f"aws {service} {operation} has no option --{option}")
        params[name] = _value(members[name], values, negated)
    required = set(model.input_shape.required_members) if model.input_shape else set()
    missing = sorted(required - set(params))
    if missing:
        raise ValueError(f"aws {service} {operation} needs {', '.join(missing)}")
    return client, model, params, globals_


def run(command: str) -> dict[str, Any]:
    """The operation's answer (moto and the stand-in in the tests)."""
    client, model, params, _ = parse(command)
    return getattr(client, xform_name(model.name))(**params)  # type: ignore[no-any-return]


def _int(text: str) -> Any:
    return int(text) if text.isdigit() else text


def _operation_name(client: Any, cli_name: str) -> str:
    for name in client.meta.service_model.operation_names:
        if xform_name(name, "-") == cli_name:
            return str(name)
    raise ValueError(f"aws {client.meta.service_model.service_name} has no command {cli_name}")


def _options(words: list[str]) -> dict[str, list[str]]:
    options: dict[str, list[str]] = {}
    current = None
    for word in words:
        if word.startswith("--"):
            current = word[2:]
            options[current] = []
        elif current is None:
            raise ValueError(f"a value without an option: {word}")
        else:
            options[current].append(word)
    return options


def _value(shape: Any, values: list[str], negated: bool) -> Any:
    if shape.type_name == "boolean":
        return not negated if not values else values[0].lower() == "true"
    if shape.type_name == "list":
        return [_scalar(shape.member, v) for v in values]
    if shape.type_name == "structure":
        (text,) = values
        pairs = dict(item.split("=", 1) for item in text.split(","))
        return {key: _scalar(shape.members[key], value) for key, value in pairs.items()}
    (text,) = values
    return _scalar(shape, text)


def _scalar(shape: Any, text: str) -> Any:
    if shape.type_name in {"integer", "long"}:
        return _int(text)
    if shape.type_name == "boolean":
        return text.lower() == "true"
    if shape.type_name == "list":
        return text.split(",")
    return text
