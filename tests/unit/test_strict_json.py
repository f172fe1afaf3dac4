"""Strict JSON where a payload leaves Python: a number JSON cannot hold is refused by its path, never sent."""

from __future__ import annotations

import json
import math

import pytest

from jobsync import clock, strict_json
from jobsync.aws.tokens import deliver
from jobsync.core.result import parse_message
from jobsync.run.inputs import LoopState


@pytest.mark.parametrize(
    "message",
    ['{"accuracy": 1e999}', '{"loss": -1e400, "ok": true}', "[1, 2, 1E309]", "1e999"],
)
def test_a_number_out_of_a_doubles_range_keeps_the_message_as_text(message):
    value = parse_message(message)
    assert value == message
    assert strict_json.dumps({"result": value})  # writes, strictly


def test_numbers_in_range_stay_numbers():
    assert parse_message('{"accuracy": 1.7976931348623157e308, "tiny": 1e-400, "big": 1' + "0" * 400 + "}") == {
        "accuracy": 1.7976931348623157e308,
        "tiny": 0.0,
        "big": 10**400,
    }


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_a_number_json_cannot_hold_is_refused_by_its_path(bad):
    with pytest.raises(strict_json.NotStrictJSON, match=r"\$\.result\.metrics\[1\]"):
        strict_json.checked({"phase": "SUCCEEDED", "result": {"metrics": [0.5, bad]}})
    with pytest.raises(strict_json.NotStrictJSON):
        strict_json.dumps([bad])
    assert strict_json.checked({"a": [1, 2.5, "inf"]}) == {"a": [1, 2.5, "inf"]}


class Tokens:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def send_task_success(self, *, taskToken: str, output: str) -> None:
        self.sent.append(output)


def loop_state(result: object) -> LoopState:
    now = clock.parse("2026-01-01T00:00:00Z") or 0.0
    return LoopState.model_validate(
        {
            "job": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "ml-training", "name": "t"},
            "execution": "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:strict",
            "submittedAt": clock.isoformat(now),
            "deadline": clock.isoformat(now + 3600),
            "phase": "SUCCEEDED",
            "phaseSince": clock.isoformat(now),
            "terminal": True,
            "result": result,
        }
    )


def test_send_task_success_gets_strict_json_and_never_infinity():
    tokens = Tokens()
    assert deliver(tokens, "token", loop_state({"accuracy": 0.97}))
    assert json.loads(tokens.sent[0], parse_constant=lambda name: pytest.fail(name))["result"] == {"accuracy": 0.97}
    with pytest.raises(strict_json.NotStrictJSON, match=r"\$\.result\.accuracy"):
        deliver(tokens, "token", loop_state({"accuracy": math.inf}))
    assert len(tokens.sent) == 1  # the refused output was never sent
