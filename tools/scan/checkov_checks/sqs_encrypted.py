"""CKV_JOBSYNC_1: every SQS queue is encrypted, by KMS or by SQS-managed keys (SSE-SQS).

Stands in for checkov's CKV_AWS_27, which (checkov 3.3.30, CloudFormation) looks only at
KmsMasterKeyId and so fails a queue encrypted with SqsManagedSseEnabled: true. A queue that
EventBridge and Lambda send failures to is better off with SSE-SQS than with a KMS key.
"""

from __future__ import annotations

from typing import Any

from checkov.cloudformation.checks.resource.base_resource_check import BaseResourceCheck
from checkov.common.models.enums import CheckCategories, CheckResult


class SQSQueueEncryptedAnyway(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure the SQS queue is encrypted (KMS or SQS-managed SSE)",
            id="CKV_JOBSYNC_1",
            categories=[CheckCategories.ENCRYPTION],
            supported_resources=["AWS::SQS::Queue"],
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        properties = conf.get("Properties") or {}
        if properties.get("KmsMasterKeyId") or properties.get("SqsManagedSseEnabled") is True:
            return CheckResult.PASSED
        return CheckResult.FAILED

    def get_evaluated_keys(self) -> list[str]:
        return ["Properties/KmsMasterKeyId", "Properties/SqsManagedSseEnabled"]


check = SQSQueueEncryptedAnyway()
