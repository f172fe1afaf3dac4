"""The hooks into moto's Step Functions interpreter, applied in :data:`HOOKS` order, grouped by what they are.

- ``jsonata``, ``services``, ``limits``: AWS behaviour moto lacks or gets wrong (JSONata as
  Step Functions evaluates it; status change events, Lambda targets and nested executions;
  the service's limits and strict JSON). Each docstring says what the service does instead;
  ``tests/harness/`` checks each against that.
- ``virtual_time``: every wait, timeout and timestamp on the harness's clock, and the order of
  concurrent executions on it, so hours pass in seconds as the service would see them.
- ``distributed_map``: a Distributed Map's items as child executions of a Map Run, its tolerated
  failure threshold, its ResultWriter's files (AWS behaviour moto lacks, as the first group).
- ``in_process``: the mapped functions run in this process.
- ``diagnostics``: what moto would swallow is kept for ``wait()`` to raise.

Each hook is ``hook(harness, patch)`` and replaces a seam of moto's through
``patch(seam, value)`` (``harness.sfn.moto`` names every seam and every private attribute the
hooks read, for the pinned versions); closing the harness undoes every patch.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any
from unittest import mock

from harness.sfn.moto import Seam, execution_arn

if TYPE_CHECKING:
    from harness.sfn.service import LocalStepFunctions

__all__ = ["HOOKS", "Hook", "Patch", "execution_arn", "install"]

Patch = Callable[[Seam, Any], None]
Hook = Callable[["LocalStepFunctions", Patch], None]

# The hook modules import Patch from here: imported after it.
from harness.sfn.hooks import (  # noqa: E402
    diagnostics,
    distributed_map,
    in_process,
    jsonata,
    limits,
    services,
    virtual_time,
)

HOOKS: tuple[Hook, ...] = (
    # First, so it is undone last: an execution thread still finishing while the harness closes evaluates on.
    jsonata.jsonata_parse_function,
    jsonata.encode_variables_as_json,
    jsonata.jsonata_errors_are_query_evaluation_errors,
    virtual_time.jsonata_now_on_virtual_clock,
    in_process.lambda_runs_in_process,
    in_process.reuse_service_clients,
    virtual_time.wait_on_virtual_clock,
    services.wait_timestamp_in_utc,
    virtual_time.retry_backoff_on_virtual_clock,
    virtual_time.seeded_full_jitter,
    virtual_time.dates_on_virtual_clock,
    virtual_time.history_timestamps_on_virtual_clock,
    virtual_time.execution_timeout_on_virtual_clock,
    virtual_time.tasks_are_waits_for_the_clock,
    virtual_time.map_iterations_are_at_work,
    services.execution_status_change_events,  # before the next: wait() returns once the event is sent
    diagnostics.execution_thread_crashes_are_kept,
    diagnostics.state_exceptions_are_kept,
    virtual_time.task_token_wait_on_virtual_clock,
    services.eventbridge_invokes_lambda_targets,
    services.sfn_integration_uses_api_names,
    services.start_execution_without_a_name_gets_a_uuid,
    virtual_time.sync_wait_checks_promptly,
    services.sync_task_stops_its_child_when_cancelled,
    services.a_stopped_execution_stays_aborted,
    services.stop_execution_keeps_its_error_and_cause,
    jsonata.jsonata_nothing_fails_naming_its_field,
    limits.history_limit_ends_the_execution,
    limits.terminal_errors_pass_states_all,
    limits.payload_limit_is_inclusive,
    limits.lambda_payload_must_be_strict_json,
    limits.send_task_success_needs_strict_json,
    limits.causes_are_cut_to_32768_characters,
    # After diagnostics: a map run learns of its child's end once the harness has recorded it.
    distributed_map.distributed_map_items_are_child_executions,
    distributed_map.definitions_are_parsed_once,
    distributed_map.result_writer_takes_arguments,
    distributed_map.map_runs_write_their_results_when_they_fail,
    distributed_map.result_writer_exports_every_child,
    distributed_map.list_executions_of_a_map_run,
)


def install(harness: LocalStepFunctions, stack: ExitStack, hooks: tuple[Hook, ...] = HOOKS) -> None:
    """Apply ``hooks`` in order; closing ``stack`` undoes every patch."""

    def patch(seam: Seam, value: Any) -> None:
        stack.enter_context(mock.patch.object(seam.owner, seam.name, value))

    for hook in hooks:
        hook(harness, patch)
