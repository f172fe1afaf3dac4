"""Object names: DNS-1123 subdomains, and labels for namespaces, as the apiserver checks them."""

from __future__ import annotations

import json
import re
from typing import Any

from harness.kubeapi.errors import invalid
from harness.kubeapi.routes import Obj, Route

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
    "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def check_name(route: Route, name: str, kind: str) -> None:
    """Raise the apiserver's 422 for a missing, malformed or too long ``metadata.name``."""
    pattern, msg = (DNS1123_LABEL, LABEL_MSG) if route.plural == "namespaces" else (DNS1123_SUBDOMAIN, SUBDOMAIN_MSG)
    limit = 63 if route.plural == "namespaces" else 253
    if not name:
        cause = {"reason": "FieldValueRequired", "message": "Required value: name or generateName is required"}
        raise invalid(route, kind, name, [{**cause, "field": "metadata.name"}])
    if not pattern.match(name) or len(name) > limit:
        body = f"Invalid value: {json.dumps(name)}: {msg}"
        if len(name) > limit:
            body = f"Invalid value: {json.dumps(name)}: must be no more than {limit} characters"
        cause = {"reason": "FieldValueInvalid", "message": body, "field": "metadata.name"}
        raise invalid(route, kind, name, [cause])


_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def label_causes(labels: Any) -> list[Obj]:
    """ValidateLabels (apimachinery): keys are qualified names, values at most 63 label characters."""
    causes: list[Obj] = []

    def invalid(value: str, message: str) -> None:
        body = f"Invalid value: {json.dumps(value)}: {message}"
        causes.append({"reason": "FieldValueInvalid", "message": body, "field": "metadata.labels"})

    for key, value in (labels or {}).items() if isinstance(labels, dict) else ():
        parts = str(key).split("/")
        name = parts[-1]
        if len(parts) > 2:
            invalid(
                key,
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
                "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
                "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional "
                "DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            )
        elif len(parts) == 2 and (len(parts[0]) > 253 or not DNS1123_SUBDOMAIN.match(parts[0])):
            invalid(key, "prefix part " + (SUBDOMAIN_MSG if parts[0] else "must be non-empty"))
        elif not name:
            invalid(key, "name part must be non-empty")
        elif len(name) > 63:
            invalid(key, "name part must be no more than 63 characters")
        elif not _QUALIFIED_NAME.match(name):
            invalid(key, _NAME_PART_MSG)
        if not isinstance(value, str):
            continue  # the decoder refuses a non-string value before validation
        if len(value) > 63:
            invalid(value, "must be no more than 63 characters")
        elif value and not _QUALIFIED_NAME.match(value):
            invalid(value, _LABEL_VALUE_MSG)
    return causes
