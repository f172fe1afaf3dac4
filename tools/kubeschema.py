"""Validate rendered Kubernetes objects against the OpenAPI v3 schemas of several Kubernetes releases.

    python tools/kubeschema.py v1.30.14 v1.37.2 -- build/chart/*.yaml

The schemas are the API server's own (``api/openapi-spec/v3`` of the ``k8s.io/kubernetes`` module at
that release, fetched with ``go mod download`` from the Go module proxy into the module cache). The
check is strict, as ``kubectl apply --validate=strict`` is: an unknown field, a wrong type, a missing
required field or a value outside an enum is an error naming its path. The e2e tier's API server
(server-side dry-run, e2e/tests/test_chart.py) remains the real validator for the release it runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import yaml

Schema = dict[str, Any]


@cache
def module_dir(release: str) -> Path:
    """The k8s.io/kubernetes module at ``release``, downloaded into the Go module cache if it is not there."""
    env = {**os.environ, "GOWORK": "off", "GOFLAGS": "-mod=mod"}
    done = subprocess.run(
        ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{release}"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=Path(__file__).parent,
    )
    return Path(json.loads(done.stdout)["Dir"])


@cache
def documents(release: str) -> dict[str, Schema]:
    """apiVersion -> its OpenAPI v3 document."""
    spec = module_dir(release) / "api" / "openapi-spec" / "v3"
    out = {}
    for path in spec.glob("*_openapi.json"):
        group = path.name.removesuffix("_openapi.json")
        if group == "api__v1":
            out["v1"] = json.loads(path.read_text())
        elif group.startswith("apis__") and group.count("__") == 2:
            _, name, version = group.split("__")
            out[f"{name}/{version}"] = json.loads(path.read_text())
    return out


def schema_of(release: str, api_version: str, kind: str) -> tuple[Schema, dict[str, Schema]] | None:
    document = documents(release).get(api_version)
    if document is None:
        return None
    schemas = document["components"]["schemas"]
    group, _, version = api_version.rpartition("/")
    for schema in schemas.values():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            if (gvk.get("group", ""), gvk["version"], gvk["kind"]) == (group, version, kind):
                return schema, schemas
    return None


def _resolve(schema: Schema, schemas: dict[str, Schema]) -> Schema:
    while True:
        if "$ref" in schema:
            schema = schemas[schema["$ref"].rsplit("/", 1)[1]]
        elif "allOf" in schema and len(schema["allOf"]) == 1 and "type" not in schema:
            schema = schema["allOf"][0]
        else:
            return schema


TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict, "array": list}


def errors(value: Any, schema: Schema, schemas: dict[str, Schema], path: str = "") -> list[str]:
    schema = _resolve(schema, schemas)
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return []
    if schema.get("format") == "int-or-string" or schema.get("x-kubernetes-int-or-string"):
        return [] if isinstance(value, int | str) and not isinstance(value, bool) else [f"{path}: not an int or string"]
    kind = schema.get("type")
    if kind and not (isinstance(value, TYPES[kind]) and not (kind != "boolean" and isinstance(value, bool))):
        return [f"{path}: {type(value).__name__} where {kind} is expected"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} is not one of {schema['enum']}"]
    out: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if properties is not None and key in properties:
                out += errors(item, properties[key], schemas, f"{path}.{key}")
            elif isinstance(extra, dict):
                out += errors(item, extra, schemas, f"{path}.{key}")
            elif properties is not None:
                out.append(f"{path}.{key}: unknown field")
        out += [f"{path}.{key}: required" for key in schema.get("required", []) if key not in value]
    elif isinstance(value, list) and "items" in schema:
        for n, item in enumerate(value):
            out += errors(item, schema["items"], schemas, f"{path}[{n}]")
    return out


def validate(doc: dict[str, Any], release: str) -> list[str]:
    found = schema_of(release, doc.get("apiVersion", ""), doc.get("kind", ""))
    where = f"{doc.get('kind')} {doc.get('metadata', {}).get('name')}"
    if found is None:
        return [f"{where}: {doc.get('apiVersion')} {doc.get('kind')} is not served by Kubernetes {release}"]
    schema, schemas = found
    return [f"{where} (Kubernetes {release}): {e.lstrip('.')}" for e in errors(doc, schema, schemas)]


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    releases, files = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    problems = []
    count = 0
    for name in files:
        for doc in yaml.safe_load_all(Path(name).read_text()):
            if doc:
                count += 1
                problems += [f"{name}: {p}" for release in releases for p in validate(doc, release)]
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{count} objects, Kubernetes {', '.join(releases)}: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
