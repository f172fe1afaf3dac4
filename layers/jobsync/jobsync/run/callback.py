"""Callback mode: the execution waits on a task token, and the notifier's event wakes it.

``arm`` runs in the Await task (``lambda:invoke.waitForTaskToken``): it
stores the token with the loop state, keyed by execution (``jobsync.aws.tokens``),
and *then* looks at the job once (``jobsync.run.poll``: the core's decision),
so a job that ended before the token was stored resumes at once; otherwise
the execution waits, with no transitions, until ``resume`` wakes it or the
task's timeout (the loop state's ``waitSeconds``, ``jobsync.core.wait.callback_wait``)
runs one ordinary Status look.

``resume`` runs on a terminal "Job Phase Changed" event (``jobsync.core.event``).
The event is a claim: it checks that an execution waits, for this very job (its
uid), and that the job has ended (one GET: ``jobsync.core.verdict.ended``),
then wakes the execution with the loop state it stored. The woken execution's
next state is Await again, whose look ends the run with the verdict, the pod
diagnostics, the log tail and the result, as every look gives them: the verdict
is made once, by a look, never copied from an event. An event for an execution
that waits for nothing, for another job, or for a job that has not ended
(stale, or forged) wakes nothing and writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobsync import clock
from jobsync.aws.tokens import TaskTokens, TokenStore, Waiting, deliver
from jobsync.core.event import PhaseChanged
from jobsync.core.ours import allowed_spec
from jobsync.core.state import LoopState
from jobsync.core.verdict import ended
from jobsync.run.loop import Cluster
from jobsync.run.poll import poll
from jobsync.settings import Settings


def arm(
    state: LoopState, token: str, cluster: Cluster, settings: Settings, store: TokenStore, tokens: TaskTokens
) -> LoopState:
    """Store the token, then look once; a job that already ended resumes the execution now."""
    store.put(state, token)
    new = poll(state, cluster, settings)
    if new.terminal:
        deliver(tokens, token, new)
        store.delete(state.execution, token)
    else:
        store.update(new, token)
    return new


@dataclass(frozen=True)
class Resumed:
    """What one event (or sweeper look) did: ``resumed`` (woke) the execution, or why not; the look's state."""

    resumed: bool
    why: str
    state: LoopState | None = None


def resume(event: PhaseChanged, cluster: Cluster, settings: Settings, store: TokenStore, tokens: TaskTokens) -> Resumed:
    execution = event.execution
    if not execution:
        return Resumed(False, "the event names no execution")
    waiting = store.get(execution)
    if waiting is None:
        return Resumed(False, "no execution waits for this job (already resumed, or polled to its end)")
    job = waiting.state.job
    if job.uid and event.detail.job.uid != job.uid:
        return Resumed(False, "the event is about another job than the one this execution created")
    obj = cluster.get(allowed_spec(job, settings), job.namespace, job.name)
    claim = ended(waiting.state, obj)
    if not claim.ended:
        why = f"{claim.seen} when looked at: the event was stale"
        current = store.get(execution)
        if current is None or current.token != waiting.token:
            why += "; the wait re-armed meanwhile and keeps its new token"
        return Resumed(False, why)
    delivered = deliver(tokens, waiting.token, waiting.state)
    store.delete(execution, waiting.token)
    if not delivered:
        return Resumed(False, "the token was already used (the safety poll took over)")
    return Resumed(True, f"{claim.seen}: woke the execution at {clock.isoformat(clock.now())}")


def settle(waiting: Waiting, cluster: Cluster, settings: Settings, store: TokenStore, tokens: TaskTokens) -> Resumed:
    """The sweeper's look at a waiting execution's job (``jobsync.run.sweep``): one ordinary look, as ``arm``'s.

    A job that ended resumes the execution with the look's loop state (its verdict, Cause and result, as any
    look gives them); otherwise the look's state is kept in the store, only while the token read is still the
    stored one (``TokenStore.update``), and the execution goes on waiting.
    """
    new = poll(waiting.state, cluster, settings)
    if not new.terminal:
        why = f"the job is {new.phase} when looked at"
        if not store.update(new, waiting.token):
            why += "; the wait re-armed meanwhile and keeps its new token"
        return Resumed(False, why, new)
    delivered = deliver(tokens, waiting.token, new)
    store.delete(waiting.execution, waiting.token)
    if not delivered:
        return Resumed(False, "the token was already used (another look resumed the execution)", new)
    return Resumed(True, f"{new.phase}: resumed the execution at {clock.isoformat(clock.now())}", new)
