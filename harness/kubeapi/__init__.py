"""An in-process Kubernetes API server over real HTTP, for tests, the local demo and the benchmark.

It speaks enough of the kube-apiserver's REST dialect for the real ``kubernetes``
Python client: CRUD on namespaced resources (core and custom), the ``/status``
subresource, merge/JSON patches, label and field selectors, chunked watches,
pod logs, Status error bodies, CRD schema validation (``fieldValidation``),
bearer tokens, TLS with a self-signed CA, and injectable faults.

The package, by concern (at run time each module imports only modules listed before it):

- ``routes``: resource paths -> :class:`Route`; ``errors``: ``kind: Status`` failures;
- ``selectors``: label and field selectors; ``patch``: merge and JSON patches;
- ``names``: object name rules; ``crds``: CRD manifests and structural-schema validation;
- ``faults``: injected faults; ``requestlog``: the request log and RBAC verbs; ``tls``: the throwaway CA;
- ``store``: objects, resourceVersions, cascades, the watch event log;
- ``rest``: the REST verbs over the store; ``pods``: pod logs; ``watch``: watches;
- ``server``: the HTTP front end; ``api``: :class:`KubeAPI`, which puts them together.
"""

from harness.kubeapi.api import KubeAPI
from harness.kubeapi.crds import (
    CRD,
    SchemaReport,
    crd_from_manifest,
    expected_free,
    prune_and_validate,
    validate_schema,
)
from harness.kubeapi.errors import ApiError, status_body
from harness.kubeapi.faults import Fault
from harness.kubeapi.names import DNS1123_LABEL, DNS1123_SUBDOMAIN, LABEL_MSG, SUBDOMAIN_MSG
from harness.kubeapi.patch import json_patch, merge_patch
from harness.kubeapi.requestlog import RequestRecord, rbac_verb
from harness.kubeapi.routes import Key, Obj, Route, parse_path, route_from_key
from harness.kubeapi.selectors import FieldSelector, Selector
from harness.kubeapi.store import CORE_KINDS, Store, WatchEvent, rfc3339
from harness.kubeapi.watch import VIRTUAL_WATCH_REACT_SECONDS, VIRTUAL_WATCH_STEP_SECONDS

__all__ = [
    "CORE_KINDS",
    "CRD",
    "DNS1123_LABEL",
    "DNS1123_SUBDOMAIN",
    "LABEL_MSG",
    "SUBDOMAIN_MSG",
    "VIRTUAL_WATCH_REACT_SECONDS",
    "VIRTUAL_WATCH_STEP_SECONDS",
    "ApiError",
    "Fault",
    "FieldSelector",
    "Key",
    "KubeAPI",
    "Obj",
    "RequestRecord",
    "Route",
    "SchemaReport",
    "Selector",
    "Store",
    "WatchEvent",
    "crd_from_manifest",
    "expected_free",
    "json_patch",
    "merge_patch",
    "parse_path",
    "prune_and_validate",
    "rbac_verb",
    "rfc3339",
    "route_from_key",
    "status_body",
    "validate_schema",
]
