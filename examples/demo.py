"""A tour of cassette's public API in three small programs.

Run it with ``python3 tools/dev.py demo`` (which builds cassette first), or
``python examples/demo.py`` in an environment where cassette is installed.

1. Tracing: a context whose prehook prints every operation of a function.
2. Contextual dispatch: an ``execute`` override that swaps ``math.sin`` for
   ``math.cos`` inside one context only.
3. Metadata: counting the operations whose positional arguments are all
   floats, with a prehook registered for ``cassette.Vararg(float)``.
4-6. Tagging: forward-mode AD, interval arithmetic and provenance (the tools
   of ``examples/ad.py``, ``intervals.py`` and ``provenance.py``) on the same
   functions.

None of the functions being run knows anything about cassette.
"""

import math
import types

import cassette


def heading(title):
    print()
    print(title)
    print("-" * len(title))


def name_of(f):
    """A readable name for a callee: ``operator.add``, ``math.sin``, ``len``."""
    qualname = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    if qualname is None:
        return repr(f)
    module = getattr(f, "__module__", None)
    if module == "_operator":
        module = "operator"
    return qualname if module in (None, "builtins") else f"{module}.{qualname}"


# --------------------------------------------------------------------------
# The ordinary code we are going to run: it imports nothing from cassette.

def rosenbrock(xs):
    a, b = 1.0, 100.0
    total = 0.0
    for i in range(len(xs) - 1):
        total += (a - xs[i]) ** 2 + b * (xs[i + 1] - xs[i] ** 2) ** 2
    return total


def wave(x):
    return 2.0 * math.sin(x) + 1.0


def norm(v):
    return math.sqrt(sum(c * c for c in v))


def mixed(n):
    total = 0.0
    for k in range(n):            # int arithmetic: not counted
        total += float(k) * 0.5   # float * float, float + float: counted
    return total + norm([3.0, 4.0])


# --------------------------------------------------------------------------
# 1. Tracing with a prehook defined in the context class body.

class Tracer(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        line = f"{name_of(f)} {args!r}"
        if kwargs:
            line += f" {kwargs!r}"
        print(line)


def demo_trace():
    heading("1. Trace of rosenbrock([1.0, 2.0, 0.5]): each (f, args) the prehook sees")
    xs = [1.0, 2.0, 0.5]
    traced = cassette.overdub(Tracer(), rosenbrock, xs)
    plain = rosenbrock(xs)
    print(f"\noverdubbed result {traced!r} == plain result {plain!r}: {traced == plain}")


# --------------------------------------------------------------------------
# 2. A per-callee override: inside SinToCos, math.sin computes math.cos.

class SinToCos(cassette.Context):
    pass


@cassette.execute.register(SinToCos, math.sin)
def _sin_is_cos(ctx, f, x):
    return math.cos(x)


def demo_override():
    heading("2. Contextual dispatch: math.sin -> math.cos inside SinToCos only")
    x = 0.5
    plain = wave(x)
    overdubbed = cassette.overdub(SinToCos(), wave, x)
    print(f"wave({x})                      = {plain!r}   (2*sin(x) + 1)")
    print(f"overdub(SinToCos(), wave, {x}) = {overdubbed!r}   (2*cos(x) + 1)")
    print(f"results differ: {plain != overdubbed}")
    print(f"math.sin outside the context is untouched: math.sin({x}) = {math.sin(x)!r}")


# --------------------------------------------------------------------------
# 3. Counting all-float operations through the context's metadata.

CountCtx = cassette.context("CountCtx")


@cassette.prehook.register(CountCtx, cassette.ANY, cassette.Vararg(float))
def _count_float_calls(ctx, f, *args):
    # Vararg(float) matches any number of positional floats, zero included.
    ctx.metadata.count += 1
    ctx.metadata.seen[name_of(f)] = ctx.metadata.seen.get(name_of(f), 0) + 1


def demo_count():
    heading("3. Metadata: counting operations whose arguments are all floats")
    ctx = CountCtx(metadata=types.SimpleNamespace(count=0, seen={}))
    result = cassette.overdub(ctx, mixed, 4)
    print(f"overdub(ctx, mixed, 4) = {result!r} (plain: {mixed(4)!r})")
    print(f"operations with only float arguments: {ctx.metadata.count}")
    for callee, n in sorted(ctx.metadata.seen.items()):
        print(f"  {callee:<20} {n}")


# --------------------------------------------------------------------------
# 4-6. Tagging: tools built on metadata that rides on values (examples/ad.py,
# examples/intervals.py, examples/provenance.py), on the same plain code.

def demo_tagging():
    import ad
    import intervals
    import provenance

    heading("4. Forward-mode AD (examples/ad.py): the gradient of rosenbrock")
    xs = [1.2, 0.8, -0.5]
    gradient = [ad.directional_derivative(rosenbrock, xs, [float(i == j) for j in range(3)])
                for i in range(3)]
    print(f"gradient at {xs}: {gradient}")
    print(f"d/dx (2 sin x + 1) at 0.5 = {ad.derivative(wave, 0.5)!r} "
          f"(2 cos 0.5 = {2 * math.cos(0.5)!r})")

    heading("5. Interval arithmetic (examples/intervals.py): enclosures of wave and norm")
    box = intervals.Interval(0.0, 1.0)
    print(f"wave(x) for x in {box}: {intervals.enclose(wave, box)}")
    print(f"norm([x, 4]) for x in [2.9, 3.1]: "
          f"{intervals.enclose(lambda x: norm([x, 4.0]), intervals.Interval(2.9, 3.1))}")

    heading("6. Provenance (examples/provenance.py): which inputs each output reads")
    print("rosenbrock's terms:",
          provenance.dependencies(lambda v: [(1.0 - v[i]) ** 2 + 100.0 * (v[i + 1] - v[i] ** 2) ** 2
                                             for i in range(len(v) - 1)], [1.0, 2.0, 3.0, 4.0]))


def main():
    print("cassette demo: overdubbing ordinary Python code through contexts")
    demo_trace()
    demo_override()
    demo_count()
    demo_tagging()


if __name__ == "__main__":
    main()
