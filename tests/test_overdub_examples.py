"""Cassette.jl's classic examples, in Python: a printing tracer, a float-call
counter, an output accumulator, memoized Fibonacci, a call-tree tracer that
recurses with ``similarcontext``, and an override of ``sin`` by ``cos``."""

import math
import numbers
import operator

import pytest

import cassette
from overdub_support import name_of


def rosenbrock(x):
    a = 1.0
    b = 100.0
    result = 0.0
    for i in range(len(x) - 1):
        result += (a - x[i]) ** 2 + b * (x[i + 1] - x[i] ** 2) ** 2
    return result


X = [0.5, 0.25]


# -- printing tracer ------------------------------------------------------------------

class PrintCtx(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        print(name_of(f), *(_short(a) for a in args))


def _short(value):
    kind = type(value).__name__
    return f"<{kind}>" if kind.endswith("iterator") else repr(value)


def test_printing_tracer_of_rosenbrock(capsys):
    assert cassette.overdub(PrintCtx(), rosenbrock, X) == rosenbrock(X) == 0.25
    assert capsys.readouterr().out.splitlines() == [
        "len [0.5, 0.25]",
        "operator.sub 2 1",
        "range 1",
        "iter range(0, 1)",
        "next <range_iterator>",
        "operator.getitem [0.5, 0.25] 0",
        "operator.sub 1.0 0.5",
        "operator.pow 0.5 2",
        "operator.add 0 1",
        "operator.getitem [0.5, 0.25] 1",
        "operator.getitem [0.5, 0.25] 0",
        "operator.pow 0.5 2",
        "operator.sub 0.25 0.25",
        "operator.pow 0.0 2",
        "operator.mul 100.0 0.0",
        "operator.add 0.25 0.0",
        "operator.iadd 0.0 0.25",
        "next <range_iterator>",          # the step that ends the loop
    ]


# -- counting calls whose arguments are all floats ------------------------------------------------

CountCtx = cassette.context("CountCtx")


@cassette.prehook.register(CountCtx, cassette.ANY, cassette.Vararg(float))
def _count_floats(ctx, f, *args):
    ctx.metadata[0] += 1


class AllOps(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata.append(args)


def test_counting_calls_with_only_float_arguments():
    ctx = CountCtx(metadata=[0])
    assert cassette.overdub(ctx, rosenbrock, X) == 0.25
    # 1.0 - 0.5, 0.25 - 0.25, 100.0 * 0.0, 0.25 + 0.0, 0.0 += 0.25
    assert ctx.metadata == [5]
    # the same count, computed from a trace of every operation
    every = AllOps(metadata=[])
    cassette.overdub(every, rosenbrock, X)
    assert sum(all(type(a) is float for a in args) for args in every.metadata) == 5


def test_counting_float_calls_in_the_readme_hypot():
    def hypot(x, y):
        return math.sqrt(x * x + y * y)

    ctx = CountCtx(metadata=[0])
    assert cassette.overdub(ctx, hypot, 3.0, 4.0) == 5.0
    assert ctx.metadata == [4]          # two products, their sum, sqrt


# -- accumulating numeric outputs ---------------------------------------------------------

class AccumCtx(cassette.Context):
    def posthook(self, output, f, *args, **kwargs):
        if isinstance(output, numbers.Number):
            self.metadata[0] += output


def test_posthook_accumulating_numeric_outputs():
    ctx = AccumCtx(metadata=[0])
    assert cassette.overdub(ctx, rosenbrock, X) == 0.25
    # len 2, 2 - 1 = 1, next -> 0, x[0] .5, 1 - .5 = .5, .5**2 = .25, 0 + 1 = 1,
    # x[1] .25, x[0] .5, .5**2 = .25, .25 - .25 = 0, 0**2 = 0, 100 * 0 = 0,
    # .25 + 0 = .25, 0 += .25 -> .25 (the failing last next has no posthook)
    assert ctx.metadata == [6.75]


def test_posthook_accumulating_outputs_of_a_division():
    ctx = AccumCtx(metadata=[0])
    assert cassette.overdub(ctx, lambda a, b: operator.truediv(a, b) + a / 4, 1, 2) == 0.75
    # truediv(1, 2) = .5, 1 / 4 = .25, .5 + .25 = .75
    assert ctx.metadata == [0.5 + 0.25 + 0.75]


# -- memoized Fibonacci ---------------------------------------------------------------------

def fib(x):
    return 1 if x < 3 else fib(x - 2) + fib(x - 1)


def fibtest(n):
    return fib(2 * n) + n


class MemoizeCtx(cassette.Context):
    pass


@cassette.execute.register(MemoizeCtx, fib)
def _memo_lookup(ctx, f, x):
    cache = ctx.metadata["cache"]
    if x in cache:
        return cache[x]
    ctx.metadata["computed"] += 1
    return cassette.OverdubInstead


@cassette.posthook.register(MemoizeCtx, fib)
def _memo_store(ctx, output, f, x):
    ctx.metadata["cache"][x] = output


def test_memoized_fib():
    ctx = MemoizeCtx(metadata={"cache": {}, "computed": 0})
    assert cassette.overdub(ctx, fibtest, 10) == fibtest(10) == 6775
    cache = ctx.metadata["cache"]
    # only fib's own calls are cached: fib(1) ... fib(20)
    assert len(cache) == 20
    assert sorted(cache) == list(range(1, 21))
    assert cache[20] == 6765 and all(cache[n] == fib(n) for n in cache)
    assert ctx.metadata["computed"] == 20      # each body ran once

    # a second run is answered from the cache at the first call
    assert cassette.overdub(ctx, fibtest, 10) == 6775
    assert ctx.metadata["computed"] == 20


# -- a call tree built by recursing with similarcontext ----------------------------------

class TreeCtx(cassette.Context):
    pass


@cassette.execute.register(TreeCtx)
def _tree(ctx, f, *args, **kwargs):
    subtrace = []
    ctx.metadata.append(((f, args), subtrace))
    if cassette.canoverdub(ctx, f, *args, **kwargs):
        inner = cassette.similarcontext(ctx, metadata=subtrace)
        return cassette.overdub(inner, f, *args, **kwargs)
    return cassette.fallback(ctx, f, *args, **kwargs)


def leaf_add(a, b):
    return a + b


def middle(x):
    return leaf_add(x, 1) * 2


def top(x):
    return middle(x) - len([x])


def test_call_tree_with_similarcontext():
    trace = []
    assert cassette.overdub(TreeCtx(metadata=trace), top, 3) == top(3) == 7
    assert trace == [
        ((middle, (3,)), [
            ((leaf_add, (3, 1)), [
                ((operator.add, (3, 1)), []),
            ]),
            ((operator.mul, (4, 2)), []),
        ]),
        ((len, ([3],)), []),
        ((operator.sub, (8, 1)), []),
    ]


def test_call_tree_of_a_method_and_a_class():
    class Acc:
        def __init__(self):
            self.items = []

        def add(self, x):
            self.items.append(x)
            return self

    def prog():
        return Acc().add(5).items

    trace = []
    assert cassette.overdub(TreeCtx(metadata=trace), prog) == [5]
    (acc_call, acc_sub), (add_call, add_sub), (get_call, get_sub) = trace
    assert acc_call == (Acc, ())
    obj = get_call[1][0]
    assert [call for call, _ in acc_sub] == [(object.__new__, (Acc,)), (Acc.__init__, (obj,))]
    assert add_call == (Acc.add, (obj, 5))
    assert [call for call, _ in add_sub] == [
        (getattr, (obj, "items")), (list.append, ([5], 5))]
    assert get_call == (getattr, (obj, "items")) and get_sub == []


# -- sin -> cos ----------------------------------------------------------------------------------

class SinToCos(cassette.Context):
    pass


@cassette.execute.register(SinToCos, math.sin)
def _cos(ctx, f, x):
    return math.cos(x)


def waves(x):
    return math.sin(x) + math.sin(2 * x)


def test_sin_becomes_cos():
    assert cassette.overdub(SinToCos(), waves, 0.3) == math.cos(0.3) + math.cos(0.6)
    assert cassette.overdub(SinToCos(), lambda x: math.sin(x), 0.0) == 1.0
    assert waves(0.3) == math.sin(0.3) + math.sin(0.6)      # untouched outside
    assert math.sin(0.0) == 0.0


def test_sin_becomes_cos_also_through_a_variable_and_map():
    def prog(xs):
        s = math.sin
        return [s(x) for x in xs]

    assert cassette.overdub(SinToCos(), prog, [0.0, 1.0]) == [1.0, math.cos(1.0)]


@pytest.mark.parametrize("n", [0, 1, 5])
def test_memoized_fib_small(n):
    ctx = MemoizeCtx(metadata={"cache": {}, "computed": 0})
    assert cassette.overdub(ctx, fibtest, n) == fibtest(n)
