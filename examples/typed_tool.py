"""A small downstream tool written against cassette's typed API.

Three things a tool author writes: a context that counts the operations a
run makes, a derivative on the tagging API, and a pass that wraps every call
of a function.  Every name it uses from cassette is annotated, so a type
checker sees real signatures: ``overdub(ctx, f, *args)`` returns what ``f``
returns and rejects arguments ``f`` does not take.  ``tests/test_typing.py``
runs ``mypy --strict`` on this file (no error allowed) and runs it.

Run it: ``python examples/typed_tool.py``.
"""

from __future__ import annotations

import collections
import math
import operator
from typing import Any, Callable

from bytecode import Bytecode

import cassette
from cassette import ir


class CountOperations(cassette.Context):
    """Counts, by name, the operations a run makes."""

    counts: collections.Counter[str]

    def __init__(self) -> None:
        super().__init__()
        self.counts = collections.Counter()

    def prehook(self, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> None:
        self.counts[getattr(f, "__name__", type(f).__name__)] += 1


def count_operations(f: Callable[..., Any], *args: Any) -> collections.Counter[str]:
    """How many times each operation ran in ``f(*args)``."""
    ctx = CountOperations()
    cassette.overdub(ctx, f, *args)
    return ctx.counts


class Derivative(cassette.Context):
    """Forward mode on tagging: a float carries its tangent, a float."""

    @classmethod
    def metadatatype(cls, T: type) -> type | None:
        return float if T is float else None


def _tangent(value: Any, ctx: cassette.Context) -> float:
    data = cassette.metadata(value, ctx)
    return 0.0 if data is cassette.NoMetaData else float(data)


@cassette.execute.register(Derivative, operator.mul)
def _product_rule(ctx: Derivative, f: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    x, y = cassette.untag(a, ctx), cassette.untag(b, ctx)
    return cassette.tag(f(x, y), ctx, _tangent(a, ctx) * y + x * _tangent(b, ctx))


@cassette.execute.register(Derivative, operator.add)
def _sum_rule(ctx: Derivative, f: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    x, y = cassette.untag(a, ctx), cassette.untag(b, ctx)
    return cassette.tag(f(x, y), ctx, _tangent(a, ctx) + _tangent(b, ctx))


@cassette.execute.register(Derivative, math.sin)
def _sine_rule(ctx: Derivative, f: Callable[[float], float], a: Any) -> Any:
    x = cassette.untag(a, ctx)
    return cassette.tag(f(x), ctx, math.cos(x) * _tangent(a, ctx))


def derivative(f: Callable[[float], float], x: float) -> float:
    """``f'(x)``, with ``f`` run unmodified."""
    ctx = cassette.enabletagging(Derivative(), f)
    result = cassette.overdub(ctx, f, cassette.tag(x, ctx, 1.0))
    return _tangent(result, ctx)


#: What the pass below records: the arguments of each call it wrapped.
SEEN: list[tuple[Any, ...]] = []


def _note(*args: Any) -> None:
    SEEN.append(args)


@cassette.Pass
def note_abs_calls(ctx_type: type, func: Any, code: Bytecode) -> Bytecode:
    """Before every call of ``abs`` in ``func``'s own code, note its argument."""
    for site in ir.call_sites(code):
        if ir.loaded_name(site.callee) == "abs":
            position = next(i for i, e in enumerate(code) if e is site.callee)
            argument = ir.variable(code, "x")
            code[position:position] = ir.call_statement(ir.nooverdub(_note), argument)
    return code


def distance(x: float) -> float:
    return abs(x) * 2.0 + 1.0


def polynomial(x: float) -> float:
    return x * x * x + 2.0 * x


def wave(x: float) -> float:
    return math.sin(x * x)


def main() -> None:
    counts = count_operations(polynomial, 3.0)
    print("operations of polynomial(3.0):", dict(sorted(counts.items())))
    print("d/dx polynomial at 2.0:", derivative(polynomial, 2.0))
    print("d/dx wave at 0.5:", derivative(wave, 0.5))
    ctx = cassette.Context(pass_=note_abs_calls)
    value: float = cassette.overdub(ctx, distance, -4.0)
    print("distance(-4.0):", value, "abs saw:", SEEN)
    with cassette.count_escapes() as escapes:
        cassette.overdub(CountOperations(), polynomial, 1.5)
    print("escapes:", escapes.total)


if __name__ == "__main__":
    main()
