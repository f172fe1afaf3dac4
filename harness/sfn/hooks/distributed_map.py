"""A Distributed Map as Step Functions runs it: each item a child workflow execution of a Map Run.

moto 5.2.5 parses ``Mode: DISTRIBUTED``, reads the items (``ItemReader``) and keeps a map run record,
but then runs every item as a frame of the parent execution, as an Inline Map does: no child
execution (no ARN, no history of its own, nothing anyone can stop), no tolerated failure threshold
(a failed item is a null in the result and the run goes on), and a ``ResultWriter`` that writes a
manifest listing no result file. The service (Step Functions developer guide: "Using Map state in
Distributed mode", "Tolerated failure threshold for Distributed Map state", "ResultWriter (Map)";
the API reference's ListExecutions) instead:

- runs each item as a child workflow execution of the Map Run, with its own history, named by a
  UUID under ``<state machine>/<map run label>``, at most ``MaxConcurrency`` at once (0: 10,000);
- fails the Map Run with ``States.ExceedToleratedFailureThreshold`` once the failed or timed-out
  items exceed ``ToleratedFailureCount`` or ``ToleratedFailurePercentage`` (neither given: any one),
  stops the children still running and starts no more;
- exports every child to S3 with ``ResultWriter``, one file per status and a manifest, also when
  the Map Run failed (the items it never started are its PENDING file);
- lists a Map Run's children with ``ListExecutions(mapRunArn=...)``.

Each hook below supplies one of these; ``tests/harness/test_sfn_distributed_map.py`` checks each.
"""

from __future__ import annotations

import json
import queue
import threading
import uuid
import weakref
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

from harness.sfn import moto
from harness.sfn.moto import (
    ActionResult,
    ASLParser,
    EventDetails,
    FailureEvent,
    FailureEventException,
    HistoryEventType,
    ItemData,
    MapData,
    MapRunFailedEventDetails,
    RecognitionException,
    StatesErrorName,
    StatesErrorNameType,
    StepFunctionsAWSError,
)

if TYPE_CHECKING:
    from harness.sfn.hooks import Patch
    from harness.sfn.service import LocalStepFunctions

# "If you don't specify [MaxConcurrency], Step Functions runs 10,000 parallel child workflow executions."
MAX_CHILDREN = 10_000
THRESHOLD_CAUSE = "The specified tolerated failure threshold was exceeded"  # as AWS words it
FAILURES = frozenset({"FAILED", "TIMED_OUT"})  # what the threshold counts; ABORTED is not a failure


@dataclass
class Child:
    """One item of a Map Run: its child execution once started, PENDING while (or if never) started."""

    index: int
    item: Any
    input: Any = None
    arn: str = ""
    name: str = ""
    status: str = "PENDING"
    start: datetime | None = None
    stop: datetime | None = None
    output: Any = None
    error: str | None = None
    cause: str | None = None


@dataclass
class MapRun:
    arn: str
    state_machine_arn: str
    children: list[Child]
    ended: queue.Queue[str] = field(default_factory=queue.Queue)
    written: bool = False


class MapRuns:
    """Every Map Run of one harness, and which run waits for which child's end."""

    def __init__(self) -> None:
        self.runs: dict[str, MapRun] = {}
        self.waiting: dict[str, MapRun] = {}  # child execution ARN -> its run
        self.dispatching: dict[int, _MapRunner] = {}  # id of the Map state's environment -> its run
        self.lock = threading.Lock()


_REGISTRY: weakref.WeakKeyDictionary[LocalStepFunctions, MapRuns] = weakref.WeakKeyDictionary()


def map_runs(harness: LocalStepFunctions) -> MapRuns:
    """The Map Runs of ``harness`` (what ran, for the tests and ``LocalJobsync.children``)."""
    return _REGISTRY.setdefault(harness, MapRuns())


@dataclass(frozen=True)
class Threshold:
    """When a Map Run fails: the failed or timed-out items over ToleratedFailureCount or ToleratedFailurePercentage.

    AWS: "If you specify both values, the workflow fails when it exceeds either value"; with neither,
    the default percentage, 0, fails the run on any failure.
    """

    count_given: bool
    percentage_given: bool

    def exceeded(self, failures: int, total: int, record: Any) -> bool:
        if not (self.count_given or self.percentage_given):
            return failures > 0
        over_count = self.count_given and failures > record.tolerated_failure_count
        over_percentage = self.percentage_given and failures * 100 > record.tolerated_failure_percentage * total
        return bool(over_count or over_percentage)


def distributed_map_items_are_child_executions(harness: LocalStepFunctions, patch: Patch) -> None:
    """Each item of a Distributed Map runs as a child workflow execution of its Map Run.

    AWS: "each iteration of the Map state runs as a child workflow execution ... Each child workflow
    execution has its own execution history, which is separate from the parent workflow's". The
    children belong to ``<state machine>/<label>`` (the Map's ``Label``, else a generated one) and are
    named by a UUID; the ItemSelector is evaluated per item in the parent (``$states.context.Map.Item``);
    at most ``MaxConcurrency`` run at once, 10,000 when it is 0. Once the failed or timed-out items
    exceed the tolerated threshold the Map Run fails (``States.ExceedToleratedFailureThreshold``,
    "The specified tolerated failure threshold was exceeded"): the children still running are stopped
    (ABORTED) and the rest never start. A parent that stops, fails or times out stops its Map Run's
    children too. moto runs the items as frames of the parent, none of this.

    On the virtual clock the children are executions like any other; the Map Run holds the clock
    while it starts children (``LocalStepFunctions.hold``) and observes each end before time moves.
    """
    runs = map_runs(harness)
    original_logic = moto.EXECUTION_LOGIC.original

    def execution_logic(worker: Any) -> None:
        try:
            original_logic(worker)
        finally:
            run = runs.waiting.pop(moto.worker_execution(worker), None)
            if run is not None:
                run.ended.put(moto.worker_execution(worker))

    def map_run(component: Any, env: Any, eval_input: Any) -> None:
        items: list[Any] = env.stack.pop()
        runner = _MapRunner(harness, runs, env, eval_input, items)
        with runs.lock:
            runs.dispatching[id(env)] = runner
        try:
            runner.run()
        finally:
            with runs.lock:
                runs.dispatching.pop(id(env), None)
                harness.release(runner.key)

    def ends(seam: Any) -> Any:
        """The environment's ``seam`` (stop, fail, time out), then, for a Map Run's parent, the clock holds
        until the run has stopped its children: no child may live on past its parent's end."""
        original = seam.original

        def end(env: Any, *args: Any, **kwargs: Any) -> None:
            original(env, *args, **kwargs)
            with runs.lock:
                runner = runs.dispatching.get(id(env))
                if runner is not None:
                    harness.hold(runner.key)
                    runner.run_.ended.put("")  # wakes the run: its parent ended

        return end

    patch(moto.EXECUTION_LOGIC, execution_logic)
    patch(moto.MAP_RUN, map_run)
    for seam in (moto.SET_STOP, moto.SET_TIMED_OUT, moto.SET_ERROR):
        patch(seam, ends(seam))


class _MapRunner:
    """One Map Run: starts the children, follows them to their end, applies the threshold."""

    def __init__(self, harness: LocalStepFunctions, runs: MapRuns, env: Any, eval_input: Any, items: list[Any]) -> None:
        self.harness, self.env, self.eval_input = harness, env, eval_input
        self.record = eval_input.map_run_record
        self.map_input = env.stack[-1] if env.stack else env.states.get_input()
        self.backend = moto.backend(self.record.map_run_arn.split(":")[3])
        state = _map_state(self.backend, env, eval_input.state_name)
        self.threshold = Threshold(
            count_given=bool({"ToleratedFailureCount", "ToleratedFailureCountPath"} & state.keys()),
            percentage_given=bool({"ToleratedFailurePercentage", "ToleratedFailurePercentagePath"} & state.keys()),
        )
        self.machine = _child_state_machine(self.backend, env, self.record, state)
        self.run_ = MapRun(self.record.map_run_arn, self.machine, [Child(i, item) for i, item in enumerate(items)])
        runs.runs[self.run_.arn] = self.run_
        self.runs = runs
        self.running: dict[str, Child] = {}
        self.failures = 0
        self.stopping = False
        self.threshold_exceeded = False
        self.key = ("map run", self.run_.arn)

    def run(self) -> None:
        children = self.run_.children
        total = len(children)
        items, executions = self.record.item_counter, self.record.execution_counter
        items.total.count(total)
        items.pending.count(total)
        limit = min(self.record.max_concurrency or MAX_CHILDREN, MAX_CHILDREN)
        pending = deque(children)
        seen: list[str] = []
        key = self.key
        self.harness.hold(key)
        try:
            while True:
                while pending and len(self.running) < limit and not self.stopping and self.env.is_running():
                    self._start(pending.popleft())
                    items.pending.offset(-1)
                    items.running.count()
                    executions.total.count()
                    executions.running.count()
                last = not self.running
                parent = moto.execution_arn(self.env) if last and self.env.is_running() else None
                for arn in seen:  # after the next children started: the clock never sees a gap
                    self.harness._observed(arn, parent)
                seen.clear()
                if last:
                    break
                self.harness.release(key)
                arn = self._next_end()
                self.harness.hold(key)
                if not arn:  # the parent ended: its children stop, their ends come next
                    self._stop_all()
                    continue
                seen.append(arn)
                self._ended(self.running.pop(arn))
        finally:
            self.harness.release(key)
        if self.threshold_exceeded:
            error = StatesErrorName(typ=StatesErrorNameType.StatesExceedToleratedFailureThreshold)
            details = MapRunFailedEventDetails(error=error.error_name, cause=THRESHOLD_CAUSE)
            raise FailureEventException(
                FailureEvent(
                    env=self.env,
                    error_name=error,
                    event_type=HistoryEventType.MapRunFailed,
                    event_details=EventDetails(mapRunFailedEventDetails=details),
                )
            )
        # Without a ResultWriter the outputs are the Map's result, in item order.
        self.env.stack.append([c.output if c.status == "SUCCEEDED" else None for c in children])

    def _start(self, child: Child) -> None:
        child.input = self._selected(child)
        child.name = str(uuid.uuid4())
        child.arn = f"{self.machine.replace(':stateMachine:', ':execution:')}:{child.name}"
        self.runs.waiting[child.arn] = self.run_
        self.harness._sync_children.add(child.arn)  # its end holds the clock until the run saw it
        self.running[child.arn] = child
        execution = self.backend.start_execution(self.machine, name=child.name, execution_input=json.dumps(child.input))
        child.start = execution.start_date
        child.status = "RUNNING"

    def _selected(self, child: Child) -> Any:
        """The child's input: the ItemSelector (or Parameters) evaluated in the parent, for this item."""
        selector = self.eval_input.item_selector or self.eval_input.parameters
        if selector is None:
            return child.item
        frame = self.env.open_frame()
        try:
            frame.states.context_object.context_object_data["Map"] = MapData(
                Item=ItemData(Index=child.index, Value=child.item)
            )
            frame.states.reset(input_value=self.map_input)
            frame.stack.append(self.map_input)
            selector.eval(frame)
            return frame.stack.pop()
        finally:
            self.env.delete_frame(frame)

    def _next_end(self) -> str:
        """The ARN of the next child to end, or "" once the parent no longer runs (and the run still does)."""
        while True:
            try:
                arn = self.run_.ended.get(timeout=0.05)
            except queue.Empty:
                arn = ""
            if arn or (not self.env.is_running() and not self.stopping):
                return arn

    def _ended(self, child: Child) -> None:
        execution = self.backend.describe_execution(child.arn)
        child.status = str(execution.status)
        if child.status == "RUNNING":  # its thread died: a harness bug, which wait() reports
            self.harness.internal_errors.append(RuntimeError(f"Map Run child {child.arn} ended while RUNNING"))
            child.status = "FAILED"
        child.stop = execution.stop_date
        child.output, child.error, child.cause = execution.output, execution.error, execution.cause
        items, executions = self.record.item_counter, self.record.execution_counter
        items.running.offset(-1)
        executions.running.offset(-1)
        counter = {"SUCCEEDED": "succeeded", "FAILED": "failed", "TIMED_OUT": "timed_out", "ABORTED": "aborted"}
        getattr(items, counter[child.status]).count()
        getattr(executions, counter[child.status]).count()
        if child.status in FAILURES:
            self.failures += 1
        total = len(self.run_.children)
        if not self.stopping and self.threshold.exceeded(self.failures, total, self.record):
            self.threshold_exceeded = True
            self._stop_all()

    def _stop_all(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        for arn in list(self.running):
            self.harness.stop_if_running(arn)


def _map_state(backend: Any, env: Any, name: str) -> dict[str, Any]:
    """The Map state's definition, as written, from the definition of the execution's state machine."""
    arn = env.states.context_object.context_object_data["StateMachine"]["Id"]
    machine = next(m for m in backend.state_machines if m.arn == arn)
    definition = json.loads(machine.definition)

    def find(states: dict[str, Any]) -> dict[str, Any] | None:
        if isinstance(states.get(name), dict) and states[name].get("Type") == "Map":
            return states[name]
        for state in states.values():
            nested = [state.get("ItemProcessor"), state.get("Iterator"), *state.get("Branches", [])]
            for inner in (n for n in nested if isinstance(n, dict)):
                found = find(inner.get("States", {}))
                if found is not None:
                    return found
        return None

    found = find(definition["States"])
    if found is None:
        raise LookupError(f"Map state {name!r} not found in {arn}")
    found = dict(found)
    found.setdefault("QueryLanguage", definition.get("QueryLanguage"))
    return found


def _child_state_machine(backend: Any, env: Any, record: Any, state: dict[str, Any]) -> str:
    """The state machine of the Map Run's children: the ItemProcessor as a definition of its own."""
    processor = dict(state.get("ItemProcessor") or state.get("Iterator") or {})
    config = processor.pop("ProcessorConfig", {})
    if config.get("ExecutionType", "STANDARD") != "STANDARD":
        raise NotImplementedError("the local run models Distributed Map children of ExecutionType STANDARD only")
    language = processor.get("QueryLanguage") or state.get("QueryLanguage")
    if language:
        processor["QueryLanguage"] = language
    arn = str(record.map_state_machine_arn)
    if not any(m.arn == arn for m in backend.state_machines):
        moto.add_state_machine(backend, arn, json.dumps(processor), env.aws_execution_details.role_arn)
    return arn


def definitions_are_parsed_once(harness: LocalStepFunctions, patch: Patch) -> None:
    """Speed only: a definition's text is parsed once; each execution builds its own program from the parse.

    moto parses the definition (ANTLR, about 70 ms for RunJob's) every time an execution starts:
    a Map Run's thousand children and their thousand RunJob executions would spend minutes on it.
    The program each execution evaluates is still its own (moto's states keep state while they
    run): only the parse tree, which nothing changes, is shared.
    """
    original = moto.PARSE_DEFINITION.original
    trees: dict[str, Any] = {}

    def parse(definition: str) -> tuple[Any, Any]:
        tree = trees.get(definition)
        if tree is None:
            program, tree = original(definition)  # a definition that does not parse raises here, every time
            trees[definition] = tree
            return program, tree
        return moto.components_of(tree), tree

    patch(moto.PARSE_DEFINITION, staticmethod(parse))


def result_writer_takes_arguments(harness: LocalStepFunctions, patch: Patch) -> None:
    """A JSONata Map's ResultWriter names its bucket and prefix in ``Arguments``, JSONata expressions allowed.

    AWS: "For JSONata states, Parameters will be replaced with Arguments" (ResultWriter (Map)).
    moto's grammar takes only ``Parameters`` there (and refuses them in a JSONata state), so a
    JSONata definition with a ResultWriter does not parse. ``ItemReader`` takes ``Arguments`` already.
    """
    original = moto.RESULT_WRITER_FIELD.original
    # The grammar's one call of arguments_decl inside a reader or writer (ItemReader's): prediction inside
    # Arguments follows the ATN from the state that calls it.
    calls = moto.rule_calls(ASLParser.RULE_items_reader_field, ASLParser.RULE_arguments_decl)

    def result_writer_field(parser: Any) -> Any:
        if parser._input.LA(1) != ASLParser.ARGUMENTS:
            return original(parser)
        context = ASLParser.Result_writer_fieldContext(parser, parser._ctx, parser.state)
        parser.enterRule(context, 170, ASLParser.RULE_result_writer_field)
        try:
            parser.enterOuterAlt(context, 1)
            parser.state = calls
            parser.arguments_decl()
        except RecognitionException as exc:
            context.exception = exc
            parser._errHandler.reportError(parser, exc)
            parser._errHandler.recover(parser, exc)
        finally:
            parser.exitRule()
        return context

    patch(moto.RESULT_WRITER_FIELD, result_writer_field)


def map_runs_write_their_results_when_they_fail(harness: LocalStepFunctions, patch: Patch) -> None:
    """A Map Run that fails still exports its children with its ResultWriter, then the Map state fails.

    AWS's ResultWriter writes the children that failed, timed out or were aborted to the FAILED
    files and the items it never started to the PENDING ones: what a failed run leaves to examine.
    moto writes only after a Map that succeeded.
    """
    runs = map_runs(harness)
    original = moto.MAP_STATE_EXECUTION.original

    def eval_execution(state: Any, env: Any) -> None:
        try:
            original(state, env)
        except Exception:
            records = moto.map_run_records(env)
            run = runs.runs.get(records[-1].map_run_arn) if records else None
            if state.result_writer is not None and run is not None and not run.written:
                env.stack.append(None)  # in place of the results, which the writer takes off the stack
                state.result_writer.eval(env)
                env.stack.pop()  # the writer's output: the state fails all the same
            raise

    patch(moto.MAP_STATE_EXECUTION, eval_execution)


def result_writer_exports_every_child(harness: LocalStepFunctions, patch: Patch) -> None:
    """ResultWriter (``arn:aws:states:::s3:putObject``) writes each child, grouped by status, and a manifest.

    AWS: under ``<Prefix>/<map run id>/``, ``SUCCEEDED_<n>.json``, ``FAILED_<n>.json`` (failed, timed out
    and aborted children) and ``PENDING_<n>.json`` (items never started), each a JSON array of the
    children's records as DescribeExecution gives them (``ExecutionArn``, ``Name``, ``StateMachineArn``,
    ``Status``, ``StartDate``, ``StopDate``, ``Input`` and ``Output`` as JSON text with their
    ``...Details``, ``Error`` and ``Cause`` when failed), and ``manifest.json``: ``DestinationBucket``,
    ``MapRunArn`` and ``ResultFiles`` (per status, each file's ``Key`` and ``Size``). The Map's output is
    ``{"MapRunArn", "ResultWriterDetails": {"Bucket", "Key"}}``, the manifest's key. A bucket that cannot
    be written fails the Map with ``States.ResultWriterFailed``. moto writes only an empty manifest.
    Not modelled: a file is never split (AWS starts a new one at 5 GB); redrive fields are left out.
    """
    runs = map_runs(harness)

    def put_object(env: Any, resource_runtime_part: Any, state_credentials: Any) -> None:
        parameters = env.stack.pop()
        env.stack.pop()  # the children's outputs: the files hold them
        record = moto.map_run_records(env)[-1]
        run = runs.runs.get(record.map_run_arn)
        bucket, prefix = parameters["Bucket"], parameters.get("Prefix", "")
        base = f"{prefix.rstrip('/')}/" if prefix else ""
        base += record.map_run_arn.rsplit(":", 1)[-1] + "/"
        groups: dict[str, list[dict[str, Any]]] = {"SUCCEEDED": [], "FAILED": [], "PENDING": []}
        for child in run.children if run else []:
            status = (
                "SUCCEEDED" if child.status == "SUCCEEDED" else "PENDING" if child.status == "PENDING" else "FAILED"
            )
            groups[status].append(_record(child, run.state_machine_arn if run else ""))
        s3 = boto3.client("s3", region_name=resource_runtime_part.region)
        files: dict[str, list[dict[str, Any]]] = {status: [] for status in groups}
        try:
            for status, entries in groups.items():
                if entries:
                    body = json.dumps(entries, separators=(",", ":"), ensure_ascii=False).encode()
                    key = f"{base}{status}_0.json"
                    s3.put_object(Bucket=bucket, Key=key, Body=body)
                    files[status].append({"Key": key, "Size": len(body)})
            manifest = {"DestinationBucket": bucket, "MapRunArn": record.map_run_arn, "ResultFiles": files}
            s3.put_object(Bucket=bucket, Key=f"{base}manifest.json", Body=json.dumps(manifest).encode())
        except ClientError as exc:
            error = StatesErrorName(typ=StatesErrorNameType.StatesResultWriterFailed)
            details = MapRunFailedEventDetails(error=error.error_name, cause=str(exc))
            raise FailureEventException(
                FailureEvent(
                    env=env,
                    error_name=error,
                    event_type=HistoryEventType.MapRunFailed,
                    event_details=EventDetails(mapRunFailedEventDetails=details),
                )
            ) from exc
        if run is not None:
            run.written = True
            written = sum(1 for c in run.children if c.status != "PENDING")
            record.item_counter.results_written.count(written)
            record.execution_counter.results_written.count(written)
        env.stack.append(
            {"MapRunArn": record.map_run_arn, "ResultWriterDetails": {"Bucket": bucket, "Key": f"{base}manifest.json"}}
        )

    patch(moto.RESULT_WRITER_PUT, staticmethod(put_object))


def _record(child: Child, state_machine_arn: str) -> dict[str, Any]:
    """A child as the result files hold it (a PENDING item: its input only)."""

    def text(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    if child.status == "PENDING":
        return {"Input": text(child.item), "InputDetails": {"Included": True}, "Status": "PENDING"}
    entry: dict[str, Any] = {
        "ExecutionArn": child.arn,
        "Input": text(child.input),
        "InputDetails": {"Included": True},
        "Name": child.name,
        "StartDate": _iso(child.start),
        "StateMachineArn": state_machine_arn,
        "Status": child.status,
        "StopDate": _iso(child.stop),
    }
    if child.status == "SUCCEEDED":
        entry["Output"] = text(child.output)
        entry["OutputDetails"] = {"Included": True}
    for key, value in (("Error", child.error), ("Cause", child.cause)):
        if value is not None:
            entry[key] = value
    return entry


def _iso(date: datetime | None) -> str | None:
    if date is None:
        return None
    return date.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{date.microsecond // 1000:03d}Z"


def list_executions_of_a_map_run(harness: LocalStepFunctions, patch: Patch) -> None:
    """ListExecutions with ``mapRunArn`` lists the child workflow executions that Map Run started.

    AWS: "If the mapRunArn field is specified, a list of all of the child workflow executions started
    by a Map Run is returned" (``stateMachineArn`` is then not given), each with its ``mapRunArn`` and
    ``itemCount``; an unknown Map Run is ResourceNotFound. moto requires ``stateMachineArn``.
    """
    runs = map_runs(harness)
    original = moto.LIST_EXECUTIONS.original

    def list_executions(response: Any) -> Any:
        map_run_arn = moto.request_param(response, "mapRunArn")
        if not map_run_arn:
            return original(response)
        run = runs.runs.get(map_run_arn)
        if run is None:
            raise MapRunNotFound(f"Map Run Does Not Exist: '{map_run_arn}'")
        status_filter = moto.request_param(response, "statusFilter")
        listed = []
        for child in run.children:
            if not child.arn or (status_filter and child.status != status_filter):
                continue
            item: dict[str, Any] = {
                "executionArn": child.arn,
                "stateMachineArn": run.state_machine_arn,
                "name": child.name,
                "status": child.status,
                "startDate": child.start,
                "mapRunArn": map_run_arn,
                "itemCount": 1,
            }
            if child.stop is not None:
                item["stopDate"] = child.stop
            listed.append(item)
        return ActionResult({"executions": listed})

    patch(moto.LIST_EXECUTIONS, list_executions)


class MapRunNotFound(StepFunctionsAWSError):
    """ListExecutions' answer for a Map Run it does not know."""

    TYPE = "ResourceNotFound"
    STATUS = 400
