"""What the benchmark prices a run at: AWS's list prices, the Lambda time billed per invocation, and what is assumed."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DAY = 86_400
CAP_HORIZON_S = 30 * DAY  # the longest deadline the template allows (MaxTimeoutSeconds)


@dataclass(frozen=True)
class Prices:
    """List prices, us-east-1, on-demand, without the free tier."""

    sfn_per_transition: float = 0.025 / 1000  # Step Functions Standard
    lambda_per_request: float = 0.20 / 1_000_000
    lambda_per_gb_second: float = 0.0000166667  # x86_64
    lambda_memory_mb: int = 256  # template.yaml Globals: MemorySize
    # Per invocation, on average: BilledDuration.mean_ms (measured handler time plus LambdaAssumptions).
    lambda_billed_ms: float = 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "region": "us-east-1",
            "step_functions_standard_usd_per_1000_transitions": self.sfn_per_transition * 1000,
            "lambda_usd_per_1m_requests": self.lambda_per_request * 1_000_000,
            "lambda_usd_per_gb_second_x86": self.lambda_per_gb_second,
            "lambda_memory_mb": self.lambda_memory_mb,
            "lambda_billed_ms_per_invocation": self.lambda_billed_ms,
            "free_tier": "not applied",
        }


@dataclass(frozen=True)
class LambdaAssumptions:
    """What the billed duration of a status poll needs and this machine cannot measure. Assumed, never measured.

    The handler's own time is measured (bench.lambdas: EKS mode, HTTPS, a
    token, moto's DescribeCluster); these are the rest, each with its reason.
    """

    # Per Kubernetes API request, from a Lambda in the cluster's VPC to the EKS endpoint
    # and back, the real API server's own time (an etcd read) included: AWS puts the
    # Availability Zones of a Region within about 100 km of each other on low-latency
    # links (aws.amazon.com/about-aws/global-infrastructure/regions_az); a few ms each way
    # plus the server is rounded up to 5 ms. The local API answers in about 1 ms.
    vpc_rtt_ms: float = 5.0
    # On a cold start, round trips no warm poll makes: TCP and TLS to the API server (2),
    # and DescribeCluster to the regional EKS endpoint (TCP, TLS, the call: 3).
    cold_extra_round_trips: int = 5
    # The Python runtime's own start before it imports the handler (the sandbox, the
    # interpreter, the runtime client): not reproducible here, a round assumed figure.
    runtime_init_ms: float = 100.0
    # AWS: "INITs (cold starts) typically occur in under 1% of invocations" (AWS Compute
    # Blog, "AWS Lambda standardizes billing for INIT Phase", April 2025). A rarely
    # polled stack starts cold more often; one in 100 is the assumption.
    invocations_per_cold_start: int = 100
    # The same post: from 1 August 2025 the INIT phase of on-demand ZIP functions on
    # managed runtimes (python3.11 here) is billed like INVOKE; before, it was free.
    init_billed: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {
            "assumed_vpc_rtt_ms": self.vpc_rtt_ms,
            "assumed_cold_extra_round_trips": self.cold_extra_round_trips,
            "assumed_runtime_init_ms": self.runtime_init_ms,
            "assumed_invocations_per_cold_start": self.invocations_per_cold_start,
            "init_phase_billed": self.init_billed,
        }


@dataclass(frozen=True)
class BilledDuration:
    """Billed ms of a status poll: the measured local handler time plus the assumed network, rounded up to 1 ms."""

    warm_ms: int  # a warm poll
    init_ms: int  # the INIT phase of a cold start (0 when INIT is not billed)
    first_ms: int  # the first invocation after it
    mean_ms: float  # per invocation, one cold start in every ``invocations_per_cold_start``

    @classmethod
    def model(
        cls,
        warm_handler_ms: float,
        requests_per_poll: float,
        cold_import_ms: float,
        first_invocation_ms: float,
        assumed: LambdaAssumptions,
    ) -> BilledDuration:
        """``warm_handler_ms`` and ``first_invocation_ms`` as measured locally (EKS mode, HTTPS), ``cold_import_ms``
        the handler's Lambda-like cold import; ``requests_per_poll`` Kubernetes API requests a poll makes."""
        if min(warm_handler_ms, requests_per_poll, cold_import_ms, first_invocation_ms) < 0:
            raise ValueError("measured times and request counts cannot be negative")
        if assumed.invocations_per_cold_start < 1:
            raise ValueError(f"invocations_per_cold_start must be 1 or more, got {assumed.invocations_per_cold_start}")
        network_ms = assumed.vpc_rtt_ms * requests_per_poll
        warm = max(1, math.ceil(warm_handler_ms + network_ms))
        init = math.ceil(assumed.runtime_init_ms + cold_import_ms) if assumed.init_billed else 0
        first = max(
            1, math.ceil(first_invocation_ms + network_ms + assumed.vpc_rtt_ms * assumed.cold_extra_round_trips)
        )
        n = assumed.invocations_per_cold_start
        return cls(warm_ms=warm, init_ms=init, first_ms=first, mean_ms=((n - 1) * warm + init + first) / n)

    def as_dict(self) -> dict[str, Any]:
        return {
            "warm_ms": self.warm_ms,
            "cold_init_ms": self.init_ms,
            "cold_first_invocation_ms": self.first_ms,
            "mean_ms_per_invocation": self.mean_ms,
        }
