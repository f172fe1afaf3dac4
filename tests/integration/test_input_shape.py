"""An execution input that is not a JSON object ends at once with InvalidInput, naming what it got."""

from __future__ import annotations

import pytest

from harness.local import LocalJobsync
from tests.support.lambdas import QUIET


@pytest.mark.parametrize(("execution_input", "got"), [([1, 2], "array"), ("mnist", "string"), (42, "number")])
def test_an_input_that_is_not_an_object_is_invalid_input_and_creates_nothing(execution_input, got):
    with LocalJobsync("success", env=QUIET) as local:
        result = local.run(execution_input, name=f"not-an-object-{got}")
        assert local.sfn
        assert [c.function_name for c in local.sfn.invocations] == []  # not even Submit ran
    assert (result.status, result.error) == ("FAILED", "InvalidInput")
    assert result.cause == f"invalid input: the execution input must be a JSON object, got {got}"
    assert result.jobs_left == []
