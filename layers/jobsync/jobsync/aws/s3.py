"""Job templates from S3: the text of ``s3://bucket/key``, or an InvalidInput that says why not."""

from __future__ import annotations

from typing import Any

from jobsync.errors import InvalidInput


def fetch_template(client: Any, uri: str) -> str:
    """The text of ``uri`` through ``client`` (boto3's S3 client); a missing or unreadable object is bad input."""
    from botocore.exceptions import ClientError

    bucket, _, key = uri.removeprefix("s3://").partition("/")
    try:
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in {"NoSuchKey", "NoSuchBucket", "404"}:
            raise InvalidInput(f"jobTemplate: {uri} does not exist") from None
        if code in {"AccessDenied", "403"}:
            raise InvalidInput(
                f"jobTemplate: access to {uri} is denied (templates must sit under the allowed prefix)"
            ) from None
        raise
    try:
        text: str = body.decode("utf-8")  # bytes from an untyped client
    except UnicodeDecodeError:
        raise InvalidInput(f"jobTemplate: {uri} is not UTF-8 text") from None
    return text
