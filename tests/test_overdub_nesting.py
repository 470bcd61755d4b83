"""reference §3.2, nesting: ``overdub`` called inside an overdubbed run.  The
outer context keeps intercepting everything that runs on behalf of the inner
one — the inner context's hooks, handlers and fallback included."""

import operator

import cassette
from overdub_support import Recorder, callees, only


def double(x):
    return x * 2


class InnerTracer(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        note(self.metadata, f)


def note(log, f):
    log.append(getattr(f, "__name__", repr(f)))


def test_outer_context_sees_the_inner_contexts_hook_calls():
    inner_log = []

    def prog():
        inner = InnerTracer(metadata=inner_log)
        return cassette.overdub(inner, lambda: double(3))

    outer = Recorder(metadata=[])
    assert cassette.overdub(outer, prog) == 6
    # the inner context traced its own operations ...
    assert inner_log == ["double", "mul"]
    # ... and the outer context saw the program's operations, the inner
    # prehook's calls and what they did
    outer_callees = callees(outer.metadata)
    assert cassette.overdub in outer_callees or any(
        getattr(f, "__name__", None) == "overdub" for f in outer_callees)
    assert outer_callees.count(double) == 1
    assert outer_callees.count(operator.mul) == 1
    assert outer_callees.count(note) == 2
    notes = only(outer.metadata, note)
    assert [args[1] for _, args, _ in notes] == [double, operator.mul]
    assert only(outer.metadata, list.append) == [
        (list.append, (inner_log, "double"), {}),
        (list.append, (inner_log, "mul"), {}),
    ]


def test_outer_context_sees_the_inner_execute_and_fallback():
    class Inner(cassette.Context):
        def execute(self, f, *args, **kwargs):
            if f is double:
                return replacement(*args)
            return cassette.OverdubInstead

        def fallback(self, f, *args, **kwargs):
            return run_primitive(f, *args, **kwargs)

    def replacement(x):
        return x + 100

    def run_primitive(f, *args, **kwargs):
        return f(*args, **kwargs)

    def prog():
        return cassette.overdub(Inner(), lambda: [double(1), abs(-2)])

    outer = Recorder(metadata=[])
    assert cassette.overdub(outer, prog) == [101, 2]
    seen = callees(outer.metadata)
    assert replacement in seen
    assert run_primitive in seen
    # the primitive abs, run by the inner fallback, is an operation of the outer context
    assert (abs, (-2,), {}) in outer.metadata
    # the outer context sees the inner program's call of double, whose body
    # never ran: the inner execute replaced it
    assert only(outer.metadata, double) == [(double, (1,), {})]
    assert (operator.mul, (1, 2), {}) not in outer.metadata
    assert seen.index(double) < seen.index(replacement)


def test_nested_overdub_result_and_exceptions_pass_through():
    class Inner(cassette.Context):
        pass

    def boom():
        raise KeyError("inner")

    def prog():
        try:
            cassette.overdub(Inner(), boom)
        except KeyError as e:
            return ("caught", e.args[0], cassette.overdub(Inner(), double, 21))

    assert cassette.overdub(Recorder(metadata=[]), prog) == ("caught", "inner", 42)


def test_three_levels_of_nesting():
    logs = {"a": [], "b": [], "c": []}

    class Level(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            self.metadata.append(f)

    def level_c():
        return double(5)

    def level_b():
        return cassette.overdub(Level(metadata=logs["c"]), level_c)

    def level_a():
        return cassette.overdub(Level(metadata=logs["b"]), level_b)

    assert cassette.overdub(Level(metadata=logs["a"]), level_a) == 10
    assert logs["c"] == [double, operator.mul]
    # b sees c's program and c's prehook appending to logs["c"]
    assert double in logs["b"] and operator.mul in logs["b"]
    assert logs["b"].count(list.append) == 2
    # a sees everything b sees plus b's own appends
    assert double in logs["a"]
    assert logs["a"].count(list.append) > logs["b"].count(list.append)


def test_same_context_class_nested_uses_independent_instances():
    class Count(cassette.Context):
        def posthook(self, out, f, *args, **kwargs):
            self.metadata[0] += 1

    inner = Count(metadata=[0])

    def prog():
        return cassette.overdub(inner, double, 4)

    outer = Count(metadata=[0])
    assert cassette.overdub(outer, prog) == 8
    assert inner.metadata == [1]          # the multiplication
    assert outer.metadata[0] > 1          # mul, and the inner posthook's +=


def test_inner_overdub_without_hooks_still_lets_outer_see_the_program():
    class Quiet(cassette.Context):
        pass

    def prog():
        return cassette.overdub(Quiet(), lambda: double(7))

    outer = Recorder(metadata=[])
    assert cassette.overdub(outer, prog) == 14
    assert double in callees(outer.metadata)
    assert (operator.mul, (7, 2), {}) in outer.metadata


def test_overdub_of_overdub_directly():
    """``overdub(outer, overdub, inner, f)``: Cassette's overdubbing an overdub."""
    inner_log = []
    outer = Recorder(metadata=[])
    inner = InnerTracer(metadata=inner_log)
    assert cassette.overdub(outer, cassette.overdub, inner, double, 2) == 4
    assert inner_log == ["mul"]
    assert (operator.mul, (2, 2), {}) in outer.metadata
    assert note in callees(outer.metadata)
