"""What a function made while overdubbed costs: a generator expression, a
closure, a lambda (a sort key, called by ``sorted`` from C), a nested
``def`` without a closure, a generator function and a ``functools.partial``
of a local function.

Each kind has two loops of ``N`` iterations: ``made`` makes the function in
every iteration and uses it once; ``hoisted`` makes it once before the loop
and uses it the same way.  Each loop runs ``plain`` and ``overdub`` (the
recursion-only context of test_overhead.py).  The extra cost of one function
made at run time is then

    ((overdub made - plain made) - (overdub hoisted - plain hoisted)) / N

— what overdubbing adds to making and first calling a function, the cost of
calling one it has seen before taken away.  bench/report.py prints it per
kind.  Every variant's result must equal plain's; nothing asserts on time.
"""

import functools

import pytest

import cassette
from test_overhead import NeverCtx

#: Iterations of each loop (functions made per call of a ``made`` loop).
N = 2000


def genexpr_made(n):
    total = 0
    for i in range(n):
        total += sum(x * i for x in (1, 2))
    return total


def genexpr_hoisted(n):
    total = 0
    values = (1, 2)
    for i in range(n):
        total += sum(values) * i        # the same work without a function
    return total


def closure_made(n):
    total = 0
    for i in range(n):
        def add(y):
            return y + i
        total += add(1)
    return total


def closure_hoisted(n):
    total = 0
    cell = [0]

    def add(y):
        return y + cell[0]
    for i in range(n):
        cell[0] = i
        total += add(1)
    return total


def lambda_made(n):
    total = 0
    data = [3, 1, 2]
    for i in range(n):
        total += sorted(data, key=lambda v: -v)[0]
    return total


def lambda_hoisted(n):
    total = 0
    data = [3, 1, 2]
    key = lambda v: -v      # noqa: E731
    for i in range(n):
        total += sorted(data, key=key)[0]
    return total


def nested_made(n):
    total = 0
    for i in range(n):
        def double(y):
            return y * 2
        total += double(i)
    return total


def nested_hoisted(n):
    total = 0

    def double(y):
        return y * 2
    for i in range(n):
        total += double(i)
    return total


def generator_made(n):
    total = 0
    for i in range(n):
        def pair():
            yield i
            yield i + 1
        for v in pair():
            total += v
    return total


def generator_hoisted(n):
    total = 0

    def pair(i):
        yield i
        yield i + 1
    for i in range(n):
        for v in pair(i):
            total += v
    return total


def partial_made(n):
    total = 0

    def add(a, b):
        return a + b
    for i in range(n):
        total += functools.partial(add, i)(1)
    return total


def partial_hoisted(n):
    total = 0

    def add(a, b):
        return a + b
    plus = functools.partial(add, 1)
    for i in range(n):
        total += plus(i)
    return total


KINDS = {
    "genexpr": (genexpr_made, genexpr_hoisted),
    "closure": (closure_made, closure_hoisted),
    "lambda": (lambda_made, lambda_hoisted),
    "nested-def": (nested_made, nested_hoisted),
    "generator-function": (generator_made, generator_hoisted),
    "partial": (partial_made, partial_hoisted),
}


@pytest.mark.parametrize("variant", ["plain", "overdub"])
@pytest.mark.parametrize("shape", ["made", "hoisted"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_runtime_function(benchmark, kind, shape, variant):
    func = KINDS[kind][0 if shape == "made" else 1]
    expected = func(N)
    if variant == "plain":
        run = functools.partial(func, N)
    else:
        ctx = NeverCtx()
        run = functools.partial(cassette.overdub, ctx, func, N)
        assert run() == expected            # warm-up: rewriting, recipes
    benchmark.group = f"runtime-function {kind}"
    benchmark.extra_info.update(kind=kind, shape=shape, variant=variant, functions=N)
    assert benchmark(run) == expected
