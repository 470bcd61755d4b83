"""The cost of overdubbing, side by side with the plain run and with the
interpreter's own instrumentation hooks.

One benchmark per (workload, variant); the benchmarks of a workload share a
pytest-benchmark group, so their timings print side by side.  Variants:

``plain``           the workload called directly;
``recursion-only``  ``cassette.overdub`` with a context whose only feature is
                    an ``execute`` override for a function no workload calls:
                    full recursion into every callee, no hook ever matches;
``prehook``         ``cassette.overdub`` with a no-op catch-all ``prehook``
                    (cassette proves it does nothing and never calls it, as
                    Cassette.jl's compiler inlines it away);
``counting-prehook`` a catch-all ``prehook`` that counts operations: every
                    operation of reference §3.1 is intercepted and a Python hook
                    runs for each;
``counting-pre-post`` the same with a counting catch-all ``posthook`` too;
``one-callee-prehook`` a ``prehook`` registered for one function no workload
                    calls: what a hook for one callee costs other code;
``setprofile``      ``sys.setprofile`` with a Python callback counting calls;
``monitoring``      ``sys.monitoring`` (3.12+) counting PY_START and CALL
                    events;
``python-floor``    no cassette: the workload built from its own modules
                    rewritten with ``ast`` (bench/floor.py) so that every call
                    and operator goes through one small Python function that
                    counts it and makes it — the floor for any Python-level
                    hook.

Every variant's result (the workload's observed return value and everything
it printed) must equal the plain result; a variant that computes something
else fails.  A warm-up call, timed once and recorded as ``first_call_ms`` in
the benchmark's ``extra_info``, precedes the measured rounds (it pays for
cassette's one-time bytecode rewriting).  Nothing here asserts on timings.
"""

import contextlib
import io
import sys
import time

import pytest

import cassette
import floor
from workloads import WORKLOAD_NAMES

VARIANTS = ("plain", "recursion-only", "one-callee-prehook", "prehook", "counting-prehook",
            "counting-pre-post", "setprofile", "monitoring", "python-floor")


# --------------------------------------------------------------------------
# Contexts


def _never_called(*args, **kwargs):
    """The callee of NeverCtx's only handler: no workload calls it."""
    raise AssertionError("bench: _never_called was called")


class NeverCtx(cassette.Context):
    """A context whose only feature is an ``execute`` override for a function
    the workloads never call: recursion everywhere, no handler ever runs."""


@cassette.execute.register(NeverCtx, _never_called)
def _never_execute(ctx, f, *args, **kwargs):
    raise AssertionError("bench: NeverCtx's execute handler ran")


class OneCalleePrehookCtx(cassette.Context):
    """A prehook registered for one callee, which no workload calls: what a
    hook for one function costs the code that never calls it."""


@cassette.prehook.register(OneCalleePrehookCtx, _never_called)
def _never_prehook(ctx, f, *args, **kwargs):
    raise AssertionError("bench: OneCalleePrehookCtx's prehook ran")


class PrehookCtx(cassette.Context):
    """A context with a no-op catch-all prehook."""

    def prehook(self, f, *args, **kwargs):
        pass


class CountingPrehookCtx(cassette.Context):
    """A catch-all prehook that does something: counts every operation."""

    def prehook(self, f, *args, **kwargs):
        self.metadata[0] += 1


class CountingPrePostCtx(cassette.Context):
    """A catch-all prehook and a catch-all posthook, each counting."""

    def prehook(self, f, *args, **kwargs):
        self.metadata[0] += 1

    def posthook(self, output, f, /, *args, **kwargs):
        self.metadata[0] += 1


# --------------------------------------------------------------------------
# Variants: each returns (run, events) where run() calls the workload once
# and events() is the number of events the instrumentation saw (or None).


def plain_variant(func, args):
    return (lambda: func(*args)), None


def overdub_variant(ctx_type):
    def variant(func, args):
        ctx = ctx_type()
        overdub = cassette.overdub
        return (lambda: overdub(ctx, func, *args)), None
    return variant


def counting_variant(func, args, ctx_type=CountingPrehookCtx):
    ctx = ctx_type(metadata=[0])
    overdub = cassette.overdub
    return (lambda: overdub(ctx, func, *args)), (lambda: ctx.metadata[0])


def counting_pre_post_variant(func, args):
    return counting_variant(func, args, CountingPrePostCtx)


def setprofile_variant(func, args):
    count = [0]

    def profile(frame, event, arg):
        if event == "call" or event == "c_call":
            count[0] += 1

    def run():
        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            return func(*args)
        finally:
            sys.setprofile(previous)

    return run, (lambda: count[0])


def free_monitoring_tool():
    monitoring = sys.monitoring
    preferred = [monitoring.PROFILER_ID, monitoring.OPTIMIZER_ID]
    for tool in preferred + [t for t in range(6) if t not in preferred]:
        if monitoring.get_tool(tool) is None:
            return tool
    raise RuntimeError("bench: every sys.monitoring tool id is in use")


def monitoring_variant(func, args):
    monitoring = sys.monitoring
    events = monitoring.events
    count = [0]

    def on_py_start(code, instruction_offset):
        count[0] += 1

    def on_call(code, instruction_offset, callable, arg0):
        count[0] += 1

    def run():
        tool = free_monitoring_tool()
        monitoring.use_tool_id(tool, "cassette-bench")
        try:
            monitoring.register_callback(tool, events.PY_START, on_py_start)
            monitoring.register_callback(tool, events.CALL, on_call)
            monitoring.set_events(tool, events.PY_START | events.CALL)
            try:
                return func(*args)
            finally:
                monitoring.set_events(tool, events.NO_EVENTS)
        finally:
            monitoring.register_callback(tool, events.PY_START, None)
            monitoring.register_callback(tool, events.CALL, None)
            monitoring.free_tool_id(tool)

    return run, (lambda: count[0])


def python_floor_variant(func, args):
    """``func`` is the floor workload's (bench/floor.py): its rewritten code
    calls the counting hook itself; events are the hook calls of one run."""
    count = floor.COUNT
    seen = [0]

    def run():
        start = count[0]
        try:
            return func(*args)
        finally:
            seen[0] = count[0] - start

    return run, (lambda: seen[0])


VARIANT_FACTORIES = {
    "plain": plain_variant,
    "recursion-only": overdub_variant(NeverCtx),
    "one-callee-prehook": overdub_variant(OneCalleePrehookCtx),
    "prehook": overdub_variant(PrehookCtx),
    "counting-prehook": counting_variant,
    "counting-pre-post": counting_pre_post_variant,
    "setprofile": setprofile_variant,
    "monitoring": monitoring_variant,
    "python-floor": python_floor_variant,
}


# --------------------------------------------------------------------------
# Results


def observed(run, workload):
    """Call ``run`` once; return the workload's observed result and what the
    call printed (instrumentation is off again when ``observe`` runs)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        value = run()
    return workload.observe(value), printed.getvalue()


def describe(value, limit=300):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def check(result, expected, workload, variant, when):
    if result != expected:
        pytest.fail(
            f"{workload.name} [{variant}] {when} returned something other than "
            f"the plain call:\n  got      {describe(result)}\n"
            f"  expected {describe(expected)}", pytrace=False)


def plain_result(workload, plain_results):
    if workload.name not in plain_results:
        run, _ = plain_variant(workload.func, workload.args)
        plain_results[workload.name] = observed(run, workload)
    return plain_results[workload.name]


# --------------------------------------------------------------------------
# The benchmarks


@pytest.mark.parametrize("workload,variant", [
    pytest.param(w, v, id=f"{w}-{v}") for w in WORKLOAD_NAMES for v in VARIANTS
])
def test_overhead(benchmark, workload_table, plain_results, workload, variant):
    if variant == "monitoring" and sys.version_info < (3, 12):
        pytest.skip("sys.monitoring needs Python 3.12+")
    benchmark.group = workload
    benchmark.extra_info.update(workload=workload, variant=variant)

    work = workload_table[workload]
    expected = plain_result(work, plain_results)
    if variant == "python-floor":
        # The same workload built by its builder from the rewritten modules:
        # its func, args and observe (which reads the rewritten modules'
        # state and files) belong to the rewritten code.
        work = floor.floor_workload(workload)
    measure(benchmark, work, variant, expected)


def measure(benchmark, work, variant, expected):
    """Benchmark ``work`` under ``variant``: a warm-up call (timed once, as
    ``first_call_ms``), then the measured rounds, each result checked
    against ``expected``; ``events_per_call`` when the variant counts."""
    run, events = VARIANT_FACTORIES[variant](work.func, work.args)

    start = time.perf_counter()
    first = observed(run, work)
    benchmark.extra_info["first_call_ms"] = (time.perf_counter() - start) * 1e3
    check(first, expected, work, variant, "(first call)")
    if events is not None:
        per_call = events()
        benchmark.extra_info["events_per_call"] = per_call
        assert per_call > 0, f"{variant} saw no events: the instrumentation did not run"

    result = benchmark(observed, run, work)
    check(result, expected, work, variant, "(measured rounds)")
