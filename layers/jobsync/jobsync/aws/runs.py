"""RunJobs' objects in S3: the jobs a run takes, its Map Run's result files, the outcomes it writes."""

from __future__ import annotations

import json
from typing import Any

from jobsync.errors import InvalidInput


def read_json(client: Any, bucket: str, key: str, limit: int, where: str) -> Any:
    """The JSON in ``s3://bucket/key`` through ``client`` (boto3's S3 client); InvalidInput naming ``where`` when
    the object is missing, denied, over ``limit`` bytes or not JSON."""
    from botocore.exceptions import ClientError

    uri = f"s3://{bucket}/{key}"
    try:
        response = client.get_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in {"NoSuchKey", "NoSuchBucket", "404"}:
            raise InvalidInput(f"{where}: {uri} does not exist") from None
        if code in {"AccessDenied", "403"}:
            raise InvalidInput(f"{where}: access to {uri} is denied") from None
        raise
    size = int(response.get("ContentLength") or 0)
    if size > limit:
        raise InvalidInput(f"{where}: {uri} is {size:,} bytes, over the {limit:,} a run reads")
    body = response["Body"].read(limit + 1)
    if len(body) > limit:
        raise InvalidInput(f"{where}: {uri} is over the {limit:,} bytes a run reads")
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_refuse)
    except ValueError as exc:
        raise InvalidInput(f"{where}: {uri} is not JSON ({str(exc)[:120]})") from None


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def write_json(client: Any, bucket: str, key: str, value: Any) -> int:
    """Put ``value`` as compact JSON at ``s3://bucket/key``; its size in bytes."""
    body = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    client.put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json")
    return len(body)


def latest_manifest(client: Any, bucket: str, prefix: str) -> str | None:
    """The key of the newest ``manifest.json`` a ResultWriter wrote under ``prefix`` (one per Map Run), if any."""
    newest: tuple[Any, str] | None = None
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for entry in page.get("Contents", []):
            key = str(entry["Key"])
            if key.endswith("/manifest.json") and (newest is None or entry["LastModified"] > newest[0]):
                newest = (entry["LastModified"], key)
    return newest[1] if newest else None
