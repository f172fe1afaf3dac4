"""Object names: DNS-1123 subdomains, and labels for namespaces, as the apiserver checks them."""

from __future__ import annotations

import json
import re

from harness.kubeapi.errors import invalid
from harness.kubeapi.routes import Route

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
