"""JSONata as Step Functions evaluates it: the hooks where moto's JSONata differs from the service's.

moto leaves its JSONata evaluator unset (upstream it is a JVM bridge) and writes
variables into the expression's text; here jsonata-python evaluates, with
``$parse`` as Step Functions adds it, the variables bound as the JSON they are,
and the errors and the "returned nothing" failures the service gives.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any

import jsonata

from harness.sfn import moto
from harness.sfn.moto import (
    EvaluationFailedEventDetails,
    EventDetails,
    FailureEvent,
    FailureEventException,
    HistoryEventType,
    StatesErrorName,
    StatesErrorNameType,
)

if TYPE_CHECKING:
    from harness.sfn.hooks import Patch
    from harness.sfn.service import LocalStepFunctions


def encode_variables_as_json(harness: LocalStepFunctions, patch: Patch) -> None:
    """Pass every variable to the expression as the JSON value it is.

    moto writes string variables as ``f'"{value}"'``, unescaped: a quote, a backslash
    or a newline in any ``$states`` value or Assign'd string breaks the expression. A
    variable assigned null reads as null, as in the service (not as nothing).
    Here each value goes through JSON (so it arrives as the service passes it, a number
    as JSONata reads the literal) and is bound to the expression by name
    (``$states:=$__v0;``) instead of written into it: the text stays the same from one
    evaluation to the next, so it is parsed once per thread, not once per state entered
    with the whole ``$states`` in it (``_evaluate``).
    """
    for seam in moto.VARIABLE_ENCODERS:
        patch(seam, _encode_jsonata_variable_declarations)
    # moto keeps the declarations' text while the variables stay the same; bound by position, they
    # are declared anew with each expression (the text comes out the same, so the parse is kept).
    patch(moto.VARIABLE_DECLARATIONS, moto.variable_declarations)


def jsonata_errors_are_query_evaluation_errors(harness: LocalStepFunctions, patch: Patch) -> None:
    """A JSONata runtime error fails the state with States.QueryEvaluationError.

    That is what AWS does (catchable, with an EvaluationFailed event); in moto the
    error escapes as a Python exception and becomes States.Runtime.
    """
    original = moto.STRING_JSONATA_EVAL.original

    def string_jsonata_eval_body(component: Any, env: Any) -> None:
        try:
            original(component, env)
        except moto.moto_jsonata.JSONataException as exc:
            raise _query_evaluation_error(env, component.expression, exc) from exc

    patch(moto.STRING_JSONATA_EVAL, string_jsonata_eval_body)


def jsonata_parse_function(harness: LocalStepFunctions, patch: Patch) -> None:
    """Evaluate JSONata with jsonata-python, with ``$parse(text)``, the JSON-parsing function Step Functions adds.

    moto composes each expression with its variables as JSONata literals and hands
    the text to an evaluator it leaves unset (upstream it is a JVM bridge).
    jsonata-python has no ``$parse``; the service parses JSON text with it (text that
    is not JSON fails the state with States.QueryEvaluationError).
    """
    patch(moto.JSONATA_EVALUATOR, _evaluate_jsonata_with_parse)


def jsonata_nothing_fails_naming_its_field(harness: LocalStepFunctions, patch: Patch) -> None:
    """A JSONata expression that returns nothing fails its state, naming the field, as AWS words it.

    AWS fails the state with States.QueryEvaluationError (catchable) when the expression
    of a field returns nothing: a whole field (``"Cause": "{% $x.absent %}"``), a value in
    a JSON object or array of the definition (``"Output": {"v": "{% $x.absent %}"}``), an
    Assign'd variable, Items, a Choice Condition. Inside a JSONata expression nothing is
    not an error: an object constructor drops the key (``{% {'v': $x.absent} %}`` is
    ``{}``), an array constructor drops the item. The Cause reads "The JSONata expression
    '...' specified for the field 'Output/v' returned nothing (undefined)."; moto fails in
    the same places but names no field, or a class of its own. Here the field is the
    innermost one a definition names (``Cause``, ``Output``, ``v``), not AWS's whole path.
    """
    original = moto.NULL_OUTPUT_CHECK.original
    original_field_name = moto.FIELD_NAME.original

    def field_name(component: Any) -> str | None:
        name = type(component).__name__
        if name == "ItemsJSONata":
            return "Items"
        if name.startswith(("JSONataTemplateValue", "AssignTemplateValue", "AssignDecl")):
            return None  # a value, not a field: the field is the key or the state's field around it
        if name.startswith("AssignTemplateBinding"):
            return str(component.identifier)
        return original_field_name(component)  # type: ignore[no-any-return]

    def validate_null_output(env: Any, expression: str, rich_jsonata_expression: str) -> None:
        try:
            original(env, expression, rich_jsonata_expression)
        except moto.FailureEventException as exc:
            assert exc.failure_event.event_details is not None
            details = exc.failure_event.event_details["evaluationFailedEventDetails"]
            details["cause"] = (
                f"The JSONata expression '{expression}' specified for the field '{env.next_field_name}' "
                "returned nothing (undefined)."
            )
            raise

    patch(moto.NULL_OUTPUT_CHECK, validate_null_output)
    patch(moto.FIELD_NAME, field_name)


# Per thread: the values bound so far for the expression being composed, those of the last one
# evaluated (moto's output checks evaluate it again, wrapped in $exists() or $type()), and the
# parsed expressions by text.
_jsonata_local = threading.local()


def _compiled(expression: str, with_parse: bool) -> Any:
    cache: dict[tuple[str, bool], Any] | None = getattr(_jsonata_local, "compiled", None)
    if cache is None:
        cache = _jsonata_local.compiled = {}
    compiled = cache.get((expression, with_parse))
    if compiled is None:
        compiled = jsonata.Jsonata(expression)
        if with_parse:
            compiled.register_lambda("parse", lambda text: json.loads(text))
        if len(cache) > 2000:  # expressions come from a few definitions: this only bounds a pathological run
            cache.clear()
        cache[(expression, with_parse)] = compiled
    return compiled


def _evaluate(expression: str, with_parse: bool) -> Any:
    building: list[Any] = getattr(_jsonata_local, "building", [])
    if building:  # a newly composed expression: its values
        _jsonata_local.values, _jsonata_local.building = building, []
    values: list[Any] = getattr(_jsonata_local, "values", [])
    try:
        return _compiled(expression, with_parse).evaluate(None, {f"__v{i}": v for i, v in enumerate(values)})
    except Exception as exc:
        raise moto.moto_jsonata.JSONataException(getattr(exc, "error", type(exc).__name__), str(exc)) from exc


def _evaluate_jsonata_with_parse(expression: str) -> Any:
    return _evaluate(expression, with_parse=True)


def _json_default(value: Any) -> Any:
    # What moto's own encoder does with non-JSON values: dates as ISO text, the rest as str().
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _as_jsonata_literal(value: Any) -> Any:
    """``value`` as JSONata would read it written as JSON: dates as ISO text, an integral number as an int."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_default)
    return json.loads(text, parse_float=lambda number: jsonata.utils.Utils.convert_number(float(number)))


def _encode_jsonata_variable_declarations(bindings: dict[str, Any]) -> str:
    building: list[Any] = getattr(_jsonata_local, "building", None) or []
    _jsonata_local.building = building
    parts = []
    for name, value in bindings.items():
        parts.append(f"{name}:=$__v{len(building)};")
        literal = _as_jsonata_literal(value)
        # A variable that holds null (an Assign'd null, a null result) is null, not nothing: jsonata-python
        # reads a binding of None as undefined, and its own null as null (None inside a value is null already).
        building.append(jsonata.utils.Utils.NULL_VALUE if literal is None else literal)
    return "".join(parts)


def _query_evaluation_error(env: Any, expression: str, exc: Any) -> FailureEventException:
    error_name = StatesErrorName(typ=StatesErrorNameType.StatesQueryEvaluationError)
    cause = (
        f"The JSONata expression '{expression}' specified for the field '{env.next_field_name}' "
        f"threw an error during evaluation. {exc.details}"
    )
    details = EventDetails(
        evaluationFailedEventDetails=EvaluationFailedEventDetails(error=error_name.error_name, cause=cause)
    )
    failure = FailureEventException(
        FailureEvent(
            env=env, error_name=error_name, event_type=HistoryEventType.EvaluationFailed, event_details=details
        )
    )
    env.event_manager.add_event(
        context=env.event_history_context,
        event_type=HistoryEventType.EvaluationFailed,
        event_details=EventDetails(evaluationFailedEventDetails=failure.get_evaluation_failed_event_details()),
    )
    return failure
