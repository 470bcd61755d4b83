"""reference §3.2: the protocol of one operation — prehook, execute (or the body /
fallback), posthook — exceptions, handler isolation, and when changes to the
registered hooks take effect."""

import math
import operator

import pytest

import cassette
from overdub_support import Recorder, callees, only, record


def square(x):
    return x * x


def sum_squares(xs):
    total = 0
    for x in xs:
        total = total + square(x)
    return total


# -- posthook, execute, OverdubInstead ------------------------------------------

class PrePost(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata.append(("pre", f, args))

    def posthook(self, output, f, *args, **kwargs):
        self.metadata.append(("post", f, args, output))


def test_posthook_sees_each_output_after_its_prehook():
    ctx = PrePost(metadata=[])
    assert cassette.overdub(ctx, sum_squares, [2, 3]) == 13
    sq = [e for e in ctx.metadata if e[1] is square]
    assert sq == [("pre", square, (2,)), ("post", square, (2,), 4),
                  ("pre", square, (3,)), ("post", square, (3,), 9)]
    # the body of square runs between its pre- and posthook
    i = ctx.metadata.index(("pre", square, (2,)))
    assert ctx.metadata[i + 1] == ("pre", operator.mul, (2, 2))
    assert ctx.metadata[i + 2] == ("post", operator.mul, (2, 2), 4)
    assert ctx.metadata[i + 3] == ("post", square, (2,), 4)
    adds = [e for e in ctx.metadata if e[0] == "post" and e[1] is operator.add]
    assert [e[3] for e in adds] == [4, 13]


class Replace(cassette.Context):
    def execute(self, f, *args, **kwargs):
        if f is square:
            return -1
        return cassette.OverdubInstead

    def prehook(self, f, *args, **kwargs):
        self.metadata.append(("pre", f, args))

    def posthook(self, output, f, *args, **kwargs):
        self.metadata.append(("post", f, args, output))


def test_execute_replaces_the_result_and_the_body_does_not_run():
    ctx = Replace(metadata=[])
    assert cassette.overdub(ctx, sum_squares, [2, 3]) == -2
    # no multiplication: square's body never ran
    assert not [e for e in ctx.metadata if e[1] is operator.mul]
    assert [e for e in ctx.metadata if e[1] is square] == [
        ("pre", square, (2,)), ("post", square, (2,), -1),
        ("pre", square, (3,)), ("post", square, (3,), -1),
    ]


def test_execute_of_a_primitive_replaces_it():
    class Cos(cassette.Context):
        def execute(self, f, *args, **kwargs):
            if f is math.sin:
                return math.cos(*args)
            return cassette.OverdubInstead

    assert cassette.overdub(Cos(), lambda x: math.sin(x), 0.0) == 1.0
    assert cassette.overdub(Cos(), lambda x: math.sin(x) + 1, 0.0) == 2.0


def test_execute_of_an_operator_replaces_it():
    class Minus(cassette.Context):
        def execute(self, f, *args, **kwargs):
            if f is operator.add:
                return args[0] - args[1]
            return cassette.OverdubInstead

    assert cassette.overdub(Minus(), lambda a, b: a + b, 5, 3) == 2
    assert cassette.overdub(Minus(), sum_squares, [1, 2]) == -5


def test_overdub_instead_recurses_into_the_body():
    class Selective(cassette.Context):
        def execute(self, f, *args, **kwargs):
            self.metadata.append(f)
            return cassette.OverdubInstead

    ctx = Selective(metadata=[])
    assert cassette.overdub(ctx, sum_squares, [4]) == 16
    # square's body is recursed into: its multiplication is an operation too
    assert callees([(f, (), {}) for f in ctx.metadata]) == [
        iter, next, square, operator.mul, operator.add, next,
    ]


def test_execute_returning_none_is_a_result():
    class Nones(cassette.Context):
        def execute(self, f, *args, **kwargs):
            if f is square:
                return None
            return cassette.OverdubInstead

    assert cassette.overdub(Nones(), lambda: [square(2), square(3)]) == [None, None]


def test_hooks_fire_for_operations_that_end_in_fallback():
    class Fall(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            self.metadata.append(("pre", f))

        def posthook(self, output, f, *args, **kwargs):
            self.metadata.append(("post", f, output))

        def fallback(self, f, *args, **kwargs):
            self.metadata.append(("fallback", f))
            return f(*args, **kwargs)

    ctx = Fall(metadata=[])
    assert cassette.overdub(ctx, lambda xs: len(xs), [1, 2]) == 2
    assert ctx.metadata == [("pre", len), ("fallback", len), ("post", len, 2)]


# -- exceptions -------------------------------------------------------------------

def fails(x):
    raise ValueError(x)


def calls_fails(x):
    y = x + 1
    return fails(y)


def test_an_exception_skips_posthooks_of_the_operation_and_enclosing_ones():
    ctx = PrePost(metadata=[])
    with pytest.raises(ValueError) as info:
        cassette.overdub(ctx, lambda: calls_fails(1))
    assert info.value.args == (2,)
    # completed: x + 1 and the construction of the exception; not completed:
    # fails(y) and calls_fails(1)
    posts = [e[1] for e in ctx.metadata if e[0] == "post"]
    assert posts == [operator.add, ValueError]
    pres = [e[1] for e in ctx.metadata if e[0] == "pre"]
    assert pres == [calls_fails, operator.add, fails, ValueError]


def test_program_try_except_finally_behave_as_plain():
    log = []

    def prog(xs):
        out = []
        for x in xs:
            try:
                try:
                    out.append(10 // x)
                finally:
                    log.append(("finally", x))
            except ZeroDivisionError as e:
                out.append(type(e).__name__)
            else:
                out.append("else")
        return out

    expected = prog([2, 0, 5])
    plain_log = list(log)
    log.clear()
    ctx = PrePost(metadata=[])
    assert cassette.overdub(ctx, prog, [2, 0, 5]) == expected == [
        5, "else", "ZeroDivisionError", 2, "else"]
    assert log == plain_log
    # the failing division had a prehook but no posthook
    divs = [e for e in ctx.metadata if e[1] is operator.floordiv]
    assert [e[0] for e in divs] == ["pre", "post", "pre", "pre", "post"]


def test_exception_inside_with_reaches_exit_and_the_handler():
    class CM:
        def __init__(self):
            self.seen = []

        def __enter__(self):
            return self

        def __exit__(self, et, ev, tb):
            self.seen.append(et)
            return False

    def prog(cm):
        try:
            with cm:
                fails("in with")
        except ValueError as e:
            return "caught " + e.args[0]

    plain_cm, dub_cm = CM(), CM()
    assert prog(plain_cm) == "caught in with"
    assert record(prog, dub_cm)[0] == "caught in with"
    assert dub_cm.seen == plain_cm.seen == [ValueError]


def test_exception_raised_in_a_hook_is_seen_by_the_programs_try_except():
    class Inject(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            if f is square:
                raise KeyError("injected")

    def prog():
        try:
            return square(3)
        except KeyError as e:
            return ("caught", e.args)

    assert cassette.overdub(Inject(), prog) == ("caught", ("injected",))


@pytest.mark.parametrize("where", ["execute", "posthook", "fallback"])
def test_exception_from_any_handler_is_seen_by_the_program(where):
    class Inject(cassette.Context):
        pass

    def handler(ctx, *args, **kwargs):
        if len in args[:2]:          # (f, ...) or, for posthook, (output, f, ...)
            raise KeyError(where)
        if where == "execute":
            return cassette.OverdubInstead
        if where == "fallback":
            return args[0](*args[1:], **kwargs)
        return None

    setattr(Inject, where, handler)

    def prog():
        try:
            len([])          # a primitive: goes through fallback
            return "no error"
        except KeyError as e:
            return e.args[0]

    assert cassette.overdub(Inject(), prog) == where


def test_exception_from_a_hook_on_an_operator_inside_a_loop():
    class FailOnThird(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            if f is operator.add and args[1] == 3:
                raise ArithmeticError("third")

    def prog(xs):
        total = 0
        caught = []
        for x in xs:
            try:
                total = total + x
            except ArithmeticError as e:
                caught.append(e.args[0])
        return total, caught

    assert cassette.overdub(FailOnThird(), prog, [1, 2, 3, 4]) == (7, ["third"])


def test_stop_iteration_of_for_next_does_not_leak():
    def gen():
        yield 1

    def prog():
        return [x for x in gen()], list(gen())

    assert record(prog)[0] == ([1], [1])


# -- handlers run plainly --------------------------------------------------------------

def helper(x):
    return x + 100


def test_code_inside_hooks_and_handlers_is_not_overdubbed():
    class Busy(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            if f is not helper:
                helper(1)                    # would be an operation if overdubbed
            self.metadata.append(f)

        def execute(self, f, *args, **kwargs):
            if f is square:
                return helper(args[0])
            return cassette.OverdubInstead

        def posthook(self, output, f, *args, **kwargs):
            sum_squares([1, 2])

    ctx = Busy(metadata=[])
    assert cassette.overdub(ctx, lambda: square(5)) == 105
    assert ctx.metadata == [square]


# -- changes take effect at the next operation -----------------------------------------------

def leaf(x):
    return x


def caller(n):
    out = []
    for i in range(n):
        out.append(leaf(i))
    return out


def test_register_after_a_run_affects_code_rewritten_before_and_old_contexts():
    class Late(cassette.Context):
        pass

    ctx = Late(metadata=[])
    assert cassette.overdub(ctx, caller, 2) == [0, 1]        # rewritten, no hooks

    @cassette.execute.register(Late, leaf)
    def _(ctx, f, x):
        return x * 10

    try:
        assert cassette.overdub(ctx, caller, 2) == [0, 10]
        assert cassette.overdub(Late(), caller, 2) == [0, 10]
    finally:
        cassette.execute.unregister(_)
    assert cassette.overdub(ctx, caller, 2) == [0, 1]


def test_registering_from_inside_a_run_takes_effect_at_the_next_call():
    class Live(cassette.Context):
        pass

    def arm():
        return "armed"

    def prog():
        out = [leaf(1)]
        arm()
        out.append(leaf(2))
        out.append(leaf(3))
        return out

    registered = []

    @cassette.execute.register(Live, arm)
    def _arm(ctx, f):
        @cassette.execute.register(Live, leaf)
        def _leaf(ctx, f, x):
            return -x
        registered.append(_leaf)
        return "armed"

    try:
        assert cassette.overdub(Live(), prog) == [1, -2, -3]
    finally:
        cassette.execute.unregister(_arm)
        for h in registered:
            cassette.execute.unregister(h)


def test_unregister_from_inside_a_run_takes_effect_at_the_next_call():
    class Live(cassette.Context):
        pass

    @cassette.execute.register(Live, leaf)
    def negate(ctx, f, x):
        if x == 2:
            cassette.execute.unregister(negate)
        return -x

    assert cassette.overdub(Live(), caller, 4) == [0, -1, -2, 3]
    with pytest.raises(ValueError):
        cassette.execute.unregister(negate)


def test_class_attribute_assignment_and_deletion_take_effect():
    class Attr(cassette.Context):
        pass

    ctx = Attr(metadata=[])
    assert cassette.overdub(ctx, caller, 2) == [0, 1]

    def prehook(self, f, *args, **kwargs):
        self.metadata.append(f)

    Attr.prehook = prehook
    assert cassette.overdub(ctx, caller, 1) == [0]
    assert ctx.metadata == [range, iter, next, leaf, list.append, next]

    def prehook2(self, f, *args, **kwargs):
        self.metadata.append("second")

    Attr.prehook = prehook2          # replace
    ctx.metadata.clear()
    cassette.overdub(ctx, leaf, 1)
    assert ctx.metadata == []        # the call of leaf itself is not hooked
    cassette.overdub(ctx, caller, 1)
    assert ctx.metadata == ["second"] * 6

    del Attr.prehook                 # remove
    ctx.metadata.clear()
    assert cassette.overdub(ctx, caller, 3) == [0, 1, 2]
    assert ctx.metadata == []


def test_class_hook_assigned_during_a_run_takes_effect_at_the_next_call():
    class Attr(cassette.Context):
        pass

    def install():
        return None

    def prehook(self, f, *args, **kwargs):
        self.metadata.append(f)

    @cassette.execute.register(Attr, install)
    def _(ctx, f):
        type(ctx).prehook = prehook

    def prog():
        leaf(1)
        install()
        leaf(2)
        return "done"

    ctx = Attr(metadata=[])
    try:
        assert cassette.overdub(ctx, prog) == "done"
    finally:
        cassette.execute.unregister(_)
    assert ctx.metadata == [leaf]


def test_subclass_hook_added_later_applies_to_existing_subclass_instances():
    class Base(cassette.Context):
        pass

    class Sub(Base):
        pass

    ctx = Sub(metadata=[])
    assert cassette.overdub(ctx, caller, 1) == [0]

    def prehook(self, f, *args, **kwargs):
        self.metadata.append(f)

    Base.prehook = prehook
    cassette.overdub(ctx, caller, 1)
    assert leaf in ctx.metadata


def test_operator_hook_registered_mid_function_applies_from_the_next_call():
    """Deliberate limitation (engine.intercepted_rows): operator sites are
    compiled raw when, at rewrite time, no handler of the context could match
    them.  A handler that newly matches an operator therefore takes effect
    from the next *call* of each function — frames already running keep
    their raw operators — while call sites re-resolve at every call and see
    it at once."""
    class Ops(cassette.Context):
        pass

    def enable():
        return None

    def step(a, b):
        return a + b

    def prog():
        x = 2
        first = x + x            # raw: no handler could match at rewrite time
        enable()
        same_frame = x + x       # still raw: this frame's code predates the handler
        next_call = step(x, x)   # a new call: rewritten with the add row
        return first, same_frame, next_call

    seen = []

    @cassette.execute.register(Ops, enable)
    def _enable(ctx, f):
        @cassette.execute.register(Ops, operator.add)
        def _add(ctx, f, a, b):
            seen.append((a, b))
            return 1000
        seen.append(_add)

    try:
        out = cassette.overdub(Ops(), prog)
    finally:
        cassette.execute.unregister(_enable)
        for h in seen:
            if callable(h):
                cassette.execute.unregister(h)
    assert out == (4, 4, 1000)
    assert [s for s in seen if not callable(s)] == [(2, 2)]


def test_operator_hook_registered_between_runs_applies_to_rewritten_code():
    class Ops(cassette.Context):
        pass

    ctx = Ops()
    assert cassette.overdub(ctx, sum_squares, [1, 2]) == 5

    @cassette.execute.register(Ops, operator.mul)
    def _(ctx, f, a, b):
        return a + b

    try:
        assert cassette.overdub(ctx, sum_squares, [1, 2]) == 2 + 4
    finally:
        cassette.execute.unregister(_)
    assert cassette.overdub(ctx, sum_squares, [1, 2]) == 5
