"""How fast can a counting prehook be?  fib(22) four ways, as ratios to plain.

Usage: ``python bench/hook_ceiling.py`` (with cassette importable, e.g. in a
venv made by ``tools/dev.py``).  It prints one line per interpreter:

* ``floor`` — bench/floor.py's shape written out by hand: each call and
  operator sent through a small Python function that counts it and makes it;
* ``ideal`` — the best any Python-level hook could do: the bench's own
  ``counting-prehook`` hook called straight from fib's bytecode before each
  call and operator (no cassette at all, nothing but the hook's cost);
* ``ideal-no-kwargs`` — the same with a hook taking no ``**kwargs`` (one
  allocation fewer per event: the floor of the floor);
* ``cassette`` — ``cassette.overdub`` with that ``counting-prehook`` context.

Issue 19 asks for the counting prehook at 8x plain or less on fib: this
shows where that sits against what calling a Python hook six times per fib
call costs, whoever calls it.
"""

import operator
import sys
import time

import cassette

N = 22
LT, ADD, SUB = operator.lt, operator.add, operator.sub


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


# bench/floor.py's own hooks (run as ``python bench/hook_ceiling.py``, this
# file's directory is on the path).
from floor import __floor_call__ as floor_call, __floor_op__ as floor_op  # noqa: E402


def floor_fib(n):
    if floor_op(LT, n, 2):
        return n
    return floor_op(ADD, floor_call(floor_fib, floor_op(SUB, n, 1)),
                    floor_call(floor_fib, floor_op(SUB, n, 2)))


class Counting(cassette.Context):
    """bench/test_overhead.py's ``counting-prehook`` context."""

    def prehook(self, f, *args, **kwargs):
        self.metadata[0] += 1


def prehook_without_kwargs(self, f, *args):
    self.metadata[0] += 1


def make_ideal(pre, ctx):
    """fib with ``pre(ctx, callee, *operands)`` before each event, as a
    rewriter emitting the hook call into the bytecode would run it."""

    def ideal_fib(n):
        pre(ctx, LT, n, 2)
        if n < 2:
            return n
        pre(ctx, SUB, n, 1)
        a = n - 1
        pre(ctx, fib, a)
        x = ideal_fib(a)
        pre(ctx, SUB, n, 2)
        b = n - 2
        pre(ctx, fib, b)
        y = ideal_fib(b)
        pre(ctx, ADD, x, y)
        return x + y

    return ideal_fib


def best(run, rounds=5):
    fastest = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest


def main():
    expected = fib(N)
    ctx = Counting(metadata=[0])
    ideal = make_ideal(Counting.prehook, ctx)
    ideal_no_kwargs = make_ideal(prehook_without_kwargs, ctx)
    for variant in (floor_fib, ideal, ideal_no_kwargs):
        assert variant(N) == expected
    assert cassette.overdub(ctx, fib, N) == expected
    plain = best(lambda: fib(N))
    ratios = {
        "floor": best(lambda: floor_fib(N)),
        "ideal": best(lambda: ideal(N)),
        "ideal-no-kwargs": best(lambda: ideal_no_kwargs(N)),
        "cassette": best(lambda: cassette.overdub(ctx, fib, N)),
    }
    print("Python %d.%d, fib(%d): " % (*sys.version_info[:2], N)
          + "  ".join("%s %.2fx" % (name, t / plain) for name, t in ratios.items()))


if __name__ == "__main__":
    main()
