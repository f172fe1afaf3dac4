"""moto's (and jsonata-python's) insides, in one place: each seam the hooks replace, each private state they read.

The hooks (``harness.sfn.hooks``) make moto's Step Functions interpreter behave as the
service does, which needs its internals: private methods, module globals, private
attributes, all of which change between releases without notice. So the harness
touches them only here: every attribute it replaces is a named ``Seam`` (checked to
exist when this module is imported), every private attribute it reads has one accessor
below, and the versions all of it is written for are checked first
(``require_pinned_versions``): another version fails at import, naming what to re-check,
rather than misbehaving in a test.
"""

from __future__ import annotations

import importlib.metadata
import threading
from dataclasses import dataclass
from typing import Any

PINNED = {"moto": "5.2.5", "jsonata-python": "0.7.1"}


def require_pinned_versions() -> None:
    """Raise ImportError unless the installed versions are the pinned ones: the seams are written for those."""
    for dist, version in PINNED.items():
        installed = importlib.metadata.version(dist)
        if installed != version:
            raise ImportError(
                f"harness.sfn patches {dist} internals and is written for {dist}=={version}, "
                f"but {dist}=={installed} is installed: install the pinned requirements-dev.txt, "
                "or re-check every seam in harness/sfn/moto.py against the new version."
            )


require_pinned_versions()  # before anything below imports moto's internals

import jsonata  # noqa: E402
import jsonata.timebox  # noqa: E402
from antlr4.error.Errors import RecognitionException  # noqa: E402
from moto.awslambda.models import LambdaFunction  # noqa: E402
from moto.core import DEFAULT_ACCOUNT_ID  # noqa: E402
from moto.core.exceptions import JsonRESTError  # noqa: E402
from moto.core.responses import ActionResult  # noqa: E402
from moto.events.models import EventTemplateParser  # noqa: E402
from moto.events.models import Rule as EventsRule  # noqa: E402
from moto.stepfunctions.exceptions import AWSError as StepFunctionsAWSError  # noqa: E402
from moto.stepfunctions.exceptions import InvalidToken  # noqa: E402
from moto.stepfunctions.exceptions import ValidationException as StepFunctionsValidationException  # noqa: E402
from moto.stepfunctions.models import StateMachine as StateMachineModel  # noqa: E402
from moto.stepfunctions.parser import models as parser_models  # noqa: E402
from moto.stepfunctions.parser.api import (  # noqa: E402
    EvaluationFailedEventDetails,
    ExecutionFailedEventDetails,
    HistoryEventType,
    MapRunFailedEventDetails,
    MapRunStatus,
    TaskFailedEventDetails,
)
from moto.stepfunctions.parser.asl.antlr.runtime.ASLParser import ASLParser  # noqa: E402
from moto.stepfunctions.parser.asl.component import eval_component  # noqa: E402
from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl  # noqa: E402
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (  # noqa: E402
    FailureEvent,
    FailureEventException,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName  # noqa: E402
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (  # noqa: E402
    StatesErrorNameType,
)
from moto.stepfunctions.parser.asl.component.common.retry import jitter_strategy_decl, retrier_decl  # noqa: E402
from moto.stepfunctions.parser.asl.component.common.string.string_expression import StringJSONata  # noqa: E402
from moto.stepfunctions.parser.asl.component.program.program import Program  # noqa: E402
from moto.stepfunctions.parser.asl.component.state import state as state_module  # noqa: E402
from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState  # noqa: E402
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (  # noqa: E402
    DistributedIterationComponent,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor import (  # noqa: E402
    map_run_record as map_run_record_module,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iteration_worker import (  # noqa: E402
    IterationWorker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.result_writer.resource_eval.resource_eval_s3 import (  # noqa: E402
    ResourceEvalS3 as ResultWriterS3,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.state_map import StateMap  # noqa: E402
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils  # noqa: E402
from moto.stepfunctions.parser.asl.component.state.exec.state_task import (  # noqa: E402
    state_task_lambda as state_task_lambda_module,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (  # noqa: E402
    state_task_service as state_task_service_module,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (  # noqa: E402
    state_task_service_callback as callback_module,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (  # noqa: E402
    state_task_service_sfn as state_task_service_sfn_module,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (  # noqa: E402
    StateTaskServiceCallback,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (  # noqa: E402
    StateTaskServiceSfn,
)
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import Timestamp  # noqa: E402
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction  # noqa: E402
from moto.stepfunctions.parser.asl.eval import states as states_module  # noqa: E402
from moto.stepfunctions.parser.asl.eval import variable_store as variable_store_module  # noqa: E402
from moto.stepfunctions.parser.asl.eval.environment import Environment  # noqa: E402
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails  # noqa: E402
from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager  # noqa: E402
from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped  # noqa: E402
from moto.stepfunctions.parser.asl.eval.states import ItemData, MapData  # noqa: E402
from moto.stepfunctions.parser.asl.jsonata import jsonata as moto_jsonata  # noqa: E402
from moto.stepfunctions.parser.asl.jsonata import validations as jsonata_validations  # noqa: E402
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser  # noqa: E402
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor  # noqa: E402
from moto.stepfunctions.parser.backend import execution as execution_module  # noqa: E402
from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker  # noqa: E402
from moto.stepfunctions.responses import StepFunctionResponse  # noqa: E402

__all__ = [  # what the hooks use of moto besides the seams: its types, errors and event details
    "ASLParser",
    "ActionResult",
    "EvaluationFailedEventDetails",
    "EventDetails",
    "EventTemplateParser",
    "ExecutionFailedEventDetails",
    "FailureEvent",
    "FailureEventException",
    "HistoryEventType",
    "InvalidToken",
    "ItemData",
    "JsonRESTError",
    "MapData",
    "MapRunFailedEventDetails",
    "MapRunStatus",
    "RecognitionException",
    "StatesErrorName",
    "StatesErrorNameType",
    "StepFunctionsAWSError",
    "StepFunctionsValidationException",
    "TaskFailedEventDetails",
    "moto_jsonata",
]


@dataclass(frozen=True)
class Seam:
    """One attribute of moto's (or jsonata-python's) the harness replaces: a method, or a module global."""

    owner: Any
    name: str

    @property
    def original(self) -> Any:
        return getattr(self.owner, self.name)


# --------------------------------------------------------------------- JSONata
JSONATA_EVALUATOR = Seam(moto_jsonata, "_eval_jsonata")  # unset in moto: upstream it is a JVM bridge
VARIABLE_ENCODERS = tuple(
    Seam(module, "encode_jsonata_variable_declarations")
    for module in (moto_jsonata, states_module, variable_store_module)
)
VARIABLE_DECLARATIONS = Seam(variable_store_module.VariableStore, "get_variable_declarations")
STRING_JSONATA_EVAL = Seam(StringJSONata, "_eval_body")
JSONATA_NOW = Seam(jsonata.timebox.Timebox, "current_milli_time")
NULL_OUTPUT_CHECK = Seam(jsonata_validations, "_validate_null_output")
FIELD_NAME = Seam(eval_component.EvalComponent, "_field_name")
# --------------------------------------------------------------------- Lambda
LAMBDA_INVOKE = Seam(LambdaFunction, "invoke")
LAMBDA_CLIENT = Seam(lambda_eval_utils, "boto_client_for")
SFN_CLIENT = Seam(state_task_service_sfn_module, "boto_client_for")  # module global: startExecution tasks
LAMBDA_PAYLOAD = Seam(lambda_eval_utils, "_from_payload")
LAMBDA_INTEGRATION = Seam(lambda_eval_utils, "execute_lambda_function_integration")
# --------------------------------------------------------------------- time
WAIT_INTERVAL = Seam(WaitFunction, "_wait_interval")
WAIT_TIMESTAMP = Seam(Timestamp, "_get_wait_seconds")
RETRY_TIME = Seam(retrier_decl, "time")  # module global
JITTER_RANDOM = Seam(jitter_strategy_decl, "random")  # module global
DATETIMES = tuple(
    Seam(module, "datetime") for module in (state_module, parser_models, execution_module, map_run_record_module)
)
HISTORY_TIMESTAMP = Seam(EventManager, "_get_current_timestamp")
PROGRAM_EVAL = Seam(Program, "eval")
TOKEN_WAIT = Seam(StateTaskServiceCallback, "_wait_for_task_token_timeout")
SYNC_TIME = Seam(callback_module, "time")  # module global
STATE_TIMEOUT = Seam(ExecutionState, "_evaluate_with_timeout")
ITERATION_EVAL = Seam(IterationWorker, "eval")
# --------------------------------------------------------------------- Distributed Map
MAP_RUN = Seam(DistributedIterationComponent, "_map_run")
MAP_STATE_EXECUTION = Seam(StateMap, "_eval_execution")
RESULT_WRITER_PUT = Seam(ResultWriterS3, "_handle_put_object")
LIST_EXECUTIONS = Seam(StepFunctionResponse, "list_executions")
RESULT_WRITER_FIELD = Seam(ASLParser, "result_writer_field")  # the parser ANTLR generated from moto's grammar
PARSE_DEFINITION = Seam(AmazonStateLanguageParser, "parse")
# --------------------------------------------------------------------- executions, errors, events
EXECUTION_LOGIC = Seam(ExecutionWorker, "_execution_logic")
LOG_EXCEPTION = Seam(eval_component.EvalComponent, "_log_exception")
SET_ERROR = Seam(Environment, "set_error")
SET_STOP = Seam(Environment, "set_stop")
SET_TIMED_OUT = Seam(Environment, "set_timed_out")
SET_ENDED = Seam(Environment, "set_ended")
ENVIRONMENT_INIT = Seam(Environment, "__init__")
ADD_EVENT = Seam(EventManager, "add_event")
ERROR_EQUALS = Seam(ErrorEqualsDecl, "_eval_body")
FAILURE_EVENT_INIT = Seam(FailureEvent, "__init__")
RULE_TARGETS = Seam(EventsRule, "send_to_targets")
SFN_PARAMETERS = Seam(StateTaskServiceSfn, "_normalise_parameters")
SFN_RESPONSE = Seam(StateTaskServiceSfn, "_normalise_response")
SFN_SYNC = Seam(StateTaskServiceSfn, "_eval_sync")
SFN_PATTERN = Seam(StateTaskServiceSfn, "_eval_integration_pattern")
START_EXECUTION = Seam(parser_models.StepFunctionsParserBackend, "start_execution")
SEND_TASK_SUCCESS = Seam(parser_models.StepFunctionsParserBackend, "send_task_success")
HISTORY_PAGES = Seam(StepFunctionResponse, "get_execution_history")
STOP_EXECUTION = Seam(StepFunctionResponse, "stop_execution")
SIZE_QUOTAS = tuple(
    Seam(module, "is_within_size_quota")
    for module in (state_module, state_task_lambda_module, state_task_service_module)
)


# --------------------------------------------------------------------- private state the hooks read


def backend(region: str) -> Any:
    """moto's Step Functions (interpreter) backend of the default account in ``region``."""
    return parser_models.stepfunctions_parser_backends[DEFAULT_ACCOUNT_ID][region]


def lambda_function(account: str, region: str, name: str) -> Any:
    """moto's Lambda function ``name`` (its model, which ``LAMBDA_INVOKE`` replaces the running of)."""
    from moto.awslambda.models import lambda_backends

    return lambda_backends[account][region].get_function(name)


def execution_arn(env: Any) -> str | None:
    """The ARN of the execution an interpreter environment belongs to (its context object's Execution.Id)."""
    try:
        return str(env.states.context_object.context_object_data["Execution"]["Id"])
    except (AttributeError, KeyError, TypeError):
        return None


def evaluate_component(component: Any, env: Any) -> None:
    """A component evaluated as moto's base class evaluates any (what a patched ``eval`` falls back to)."""
    eval_component.EvalComponent.eval(component, env)


def is_sfn_task(state: Any) -> bool:
    """Whether a state is a ``states:startExecution`` task (its waits are its child's)."""
    return isinstance(state, StateTaskServiceSfn)


def variable_declarations(store: Any) -> str:
    """A variable store's declarations, outer scope then inner, composed anew (moto caches the text)."""
    outer, inner = store._outer_scope, store._inner_scope
    return str(store._to_variable_declarations(outer) + store._to_variable_declarations(inner))


def timestamp_of(wait_fn: Any, text: str) -> Any:
    """A Wait ``Timestamp``'s text as moto parses it (a naive datetime in UTC), or None."""
    return wait_fn._from_timestamp_string(timestamp=text)


def timestamp_failure(wait_fn: Any, env: Any, text: str) -> Any:
    return wait_fn._create_failure_event(env, text)


def answered(endpoint: Any) -> threading.Event:
    """The event a task token's endpoint sets once SendTaskSuccess (or a failure) came."""
    event: threading.Event = endpoint._notify_event
    return event


def iteration_env(worker: Any) -> Any:
    """The environment a Map iteration's worker runs in."""
    return worker._env


def worker_execution(worker: Any) -> str:
    """The ARN of the execution an execution worker runs."""
    return str(worker._evaluation_details.execution_details.arn)


def stopped(env: Any) -> bool:
    """Whether the program of ``env`` was stopped (StopExecution)."""
    return isinstance(env._program_state, ProgramStopped)


def history_list(manager: Any) -> list[Any]:
    """An event manager's history events, as moto keeps them (its own types)."""
    events: list[Any] = manager._history_event_list
    return events


def from_boto_response(task: Any, response: Any, shape: Any) -> None:
    task._from_boto_response(response, shape)


def request_param(response: Any, name: str, default: Any = None) -> Any:
    """A parameter of the request a moto response object answers."""
    return response._get_param(name, default)


def add_state_machine(backend: Any, arn: str, definition: str, role_arn: str) -> Any:
    """A Standard state machine in moto's backend under ``arn``, whatever its name (a map run's, with a ``/``).

    ``CreateStateMachine`` refuses a ``/`` in a name, as AWS does for the machines it creates; the
    child workflow executions of a Distributed Map belong to ``<state machine>/<map run label>``.
    """
    name = arn.split(":stateMachine:", 1)[1]
    machine = StateMachineModel(arn, name, definition, role_arn, backend, sm_type="STANDARD")
    backend.state_machines.append(machine)
    return machine


def describe_output(execution: Any) -> dict[str, Any]:
    """DescribeExecution's response for a moto execution, as the API returns it (the status as its name)."""
    description = dict(execution.to_describe_output())
    description["status"] = str(getattr(description["status"], "value", description["status"]))
    return {key: value for key, value in description.items() if value is not None}


def put_events(region: str, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PutEvents on moto's EventBridge of the default account in ``region``: its rules match, its targets get them."""
    from moto.events.models import events_backends

    results: list[dict[str, Any]] = events_backends[DEFAULT_ACCOUNT_ID][region].put_events(entries)
    return results


def execution_env(execution: Any) -> Any:
    """The interpreter environment of a started execution, or None before its thread made it."""
    worker = execution.exec_worker
    return worker.env if worker is not None else None


def map_run_records(env: Any) -> list[Any]:
    """The map runs an execution's environment started, in order (moto's MapRunRecord objects)."""
    records: list[Any] = env.map_run_record_pool_manager.get_all()
    return records


def components_of(tree: Any) -> Any:
    """The evaluation components moto builds from a definition's parse tree (a program of its own)."""
    return Preprocessor().visit(tree)


def rule_calls(caller: int, callee: int) -> int:
    """The ATN state of moto's ASL grammar where rule ``caller`` calls rule ``callee`` (ANTLR's generated parser)."""
    atn = ASLParser.atn
    start = atn.ruleToStartState[callee]
    return next(
        state.stateNumber
        for state in atn.states
        if state is not None
        and state.ruleIndex == caller
        and any(getattr(t, "target", None) is start for t in state.transitions)
    )


def _check_seams() -> None:
    """Every seam exists in the pinned versions; a missing one names itself (and so the hook to re-check)."""
    seams = [v for v in globals().values() if isinstance(v, Seam)]
    seams += [s for v in globals().values() if isinstance(v, tuple) for s in v if isinstance(s, Seam)]
    missing = [f"{getattr(s.owner, '__name__', s.owner)}.{s.name}" for s in seams if not hasattr(s.owner, s.name)]
    if missing:
        raise ImportError(f"moto {PINNED['moto']} seams missing: {', '.join(missing)}")


_check_seams()
