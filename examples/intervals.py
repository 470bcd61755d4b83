"""Interval arithmetic on cassette's tagging API.

``enclose(f, *boxes)`` runs ``f`` unmodified on the midpoints of the input
intervals, each carrying its :class:`Interval` as metadata; handlers for the
arithmetic operators, ``abs``, ``min``/``max``, ``math`` functions and
comparisons compute an enclosure of every value alongside the midpoint run,
rounding outward so that floating-point error never shrinks an enclosure.
The result encloses ``f(x)`` for every ``x`` in the boxes.

A primitive with no interval rule that computes a number from numbers
with enclosures (``round``, ``math.floor`` …) raises :class:`NoIntervalRule`
rather than return an unsound result.

A comparison between values whose enclosures overlap cannot be decided
for every point of the boxes: it raises :class:`Undecidable` (a clear error
naming the comparison and the intervals) instead of silently following the
midpoint's branch.  A comparison whose enclosures are disjoint is decided,
so code that branches on it runs the branch every point would take.

Only the public API is used (``enabletagging``, ``tag``, ``untag``,
``istagged``, ``metadata``, ``execute.register``, ``overdub``).

Run it: ``python examples/intervals.py``.
"""

import math
import operator

import cassette
from cassette import OverdubInstead, enabletagging, istagged, metadata, tag, untag

__all__ = ["Interval", "IntervalArithmetic", "NoIntervalRule", "Undecidable", "enclose"]

_INF = math.inf


def _down(x):
    return math.nextafter(x, -_INF)


def _up(x):
    return math.nextafter(x, _INF)


class Interval:
    """The closed interval ``[lo, hi]`` (floats, ``lo <= hi``)."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo, hi=None):
        hi = lo if hi is None else hi
        lo, hi = float(lo), float(hi)
        if not lo <= hi:
            raise ValueError(f"an interval needs lo <= hi, got [{lo}, {hi}]")
        self.lo, self.hi = lo, hi

    @classmethod
    def outward(cls, lo, hi):
        """``[lo, hi]`` widened by one unit in the last place each way."""
        return cls(_down(lo), _up(hi))

    @property
    def midpoint(self):
        return self.lo + (self.hi - self.lo) / 2

    def __contains__(self, x):
        return self.lo <= x <= self.hi

    def __eq__(self, other):
        return isinstance(other, Interval) and (self.lo, self.hi) == (other.lo, other.hi)

    def __hash__(self):
        return hash((self.lo, self.hi))

    def __repr__(self):
        return f"Interval({self.lo!r}, {self.hi!r})"


class Undecidable(ArithmeticError):
    """A comparison that holds for some points of the input boxes and not
    for others."""


class NoIntervalRule(TypeError):
    """A primitive computed a number from numbers with enclosures, and there
    is no interval rule for it: its result would have no valid enclosure."""


class IntervalArithmetic(cassette.Context):
    """Numbers carry the interval enclosing them."""

    @classmethod
    def metadatatype(cls, T):
        if issubclass(T, (int, float)) and T is not bool:
            return Interval
        return None

    def fallback(self, f, /, *args, **kwargs):
        """Primitives without a rule run as usual (metadata still flows
        through containers and objects) — unless they compute a number from
        numbers with enclosures: that result would be silently unsound."""
        out = super().fallback(f, *args, **kwargs)
        if (isinstance(out, (int, float)) and not istagged(out, self)
                and f not in _OPAQUE_TO_VALUES
                and any(istagged(a, self) for a in (*args, *kwargs.values()))):
            raise NoIntervalRule(
                f"no interval rule for {getattr(f, '__qualname__', f)!r}: it computed "
                f"{out!r} from values that carry enclosures")
        return out


#: Primitives whose numeric results do not depend on the values' magnitudes.
_OPAQUE_TO_VALUES = (len, id, hash, isinstance, type)


def enclosure(value, ctx):
    """The interval ``value`` carries (a degenerate one for a plain number)."""
    data = metadata(value, ctx)
    if data is cassette.NoMetaData:
        primal = untag(value, ctx)
        return Interval(primal, primal)
    return data


# -- interval operations ------------------------------------------------------------

def _add(a, b):
    return Interval.outward(a.lo + b.lo, a.hi + b.hi)


def _sub(a, b):
    return Interval.outward(a.lo - b.hi, a.hi - b.lo)


def _mul(a, b):
    products = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
    return Interval.outward(min(products), max(products))


def _div(a, b):
    if b.lo <= 0.0 <= b.hi:
        raise ZeroDivisionError(f"interval division by {b!r}, which contains 0")
    return _mul(a, Interval.outward(1.0 / b.hi, 1.0 / b.lo))


def _neg(a):
    return Interval(-a.hi, -a.lo)


def _abs(a):
    if a.lo >= 0:
        return a
    if a.hi <= 0:
        return _neg(a)
    return Interval(0.0, max(-a.lo, a.hi))


def _pow(a, b):
    if b.lo != b.hi or b.lo != int(b.lo):
        # x ** y = exp(y log x) for x > 0.
        if a.lo <= 0:
            raise ValueError(f"interval power {a!r} ** {b!r} needs a positive base")
        return _exp(_mul(b, _log(a)))
    n = int(b.lo)
    if n == 0:
        return Interval(1.0, 1.0)
    if n < 0:
        return _div(Interval(1.0, 1.0), _pow(a, Interval(-n, -n)))
    lo, hi = a.lo ** n, a.hi ** n
    if n % 2 == 0:
        if a.lo <= 0.0 <= a.hi:
            return Interval(0.0, _up(max(lo, hi)))
        return Interval.outward(min(lo, hi), max(lo, hi))
    return Interval.outward(lo, hi)


def _monotone(f):
    def apply(a):
        return Interval.outward(f(a.lo), f(a.hi))
    return apply


_exp = _monotone(math.exp)
_sqrt = _monotone(math.sqrt)
_atan = _monotone(math.atan)
_tanh = _monotone(math.tanh)


def _log(a):
    if a.lo <= 0:
        raise ValueError(f"interval log of {a!r}, which is not positive")
    return Interval.outward(math.log(a.lo), math.log(a.hi))


def _periodic(f, peak):
    """``f`` (sin or cos): the endpoints' values, widened to ±1 where the
    interval holds a peak (``peak`` + 2kπ) or a trough (``peak`` + π + 2kπ)."""
    def apply(a):
        if a.hi - a.lo >= 2 * math.pi:
            return Interval(-1.0, 1.0)
        lo = min(f(a.lo), f(a.hi))
        hi = max(f(a.lo), f(a.hi))
        slack = 1e-9 * max(1.0, abs(a.lo), abs(a.hi))

        def holds(point):
            k = math.ceil((a.lo - slack - point) / (2 * math.pi))
            return point + 2 * math.pi * k <= a.hi + slack

        if holds(peak):
            hi = 1.0
        if holds(peak + math.pi):
            lo = -1.0
        return Interval(max(-1.0, _down(lo)), min(1.0, _up(hi)))
    return apply


_RULES = {
    operator.add: _add, operator.iadd: _add, operator.sub: _sub, operator.isub: _sub,
    operator.mul: _mul, operator.imul: _mul, operator.truediv: _div,
    operator.itruediv: _div, operator.pow: _pow, operator.ipow: _pow,
    operator.neg: _neg, operator.pos: lambda a: a, abs: _abs, float: lambda a: a,
    math.exp: _exp, math.log: _log, math.sqrt: _sqrt, math.atan: _atan, math.tanh: _tanh,
    math.sin: _periodic(math.sin, math.pi / 2), math.cos: _periodic(math.cos, 0.0),
    min: lambda *xs: Interval(min(x.lo for x in xs), min(x.hi for x in xs)),
    max: lambda *xs: Interval(max(x.lo for x in xs), max(x.hi for x in xs)),
}


def _register(callee, rule):
    @cassette.execute.register(IntervalArithmetic, callee)
    def propagate(ctx, f, *args):
        if not any(istagged(a, ctx) for a in args):
            return OverdubInstead
        # The enclosure first: its errors (an interval holding 0 as a
        # divisor …) are the ones to report, not the midpoint's.
        bounds = rule(*[enclosure(a, ctx) for a in args])
        return tag(f(*[untag(a, ctx) for a in args]), ctx, bounds)


for _callee, _rule in _RULES.items():
    _register(_callee, _rule)


@cassette.execute.register(IntervalArithmetic, sum)
def _sum(ctx, f, iterable, start=0):
    """``sum``: a generator yields tagged values; a list built in the run
    holds primal ones and its enclosures as per-element metadata."""
    components = cassette.metameta(iterable, ctx)
    values = list(iterable)
    if isinstance(components, list) and len(components) == len(values):
        boxes = [Interval(v, v) if m.data is cassette.NoMetaData else m.data
                 for v, m in zip(values, components)]
        primals = values
    else:
        boxes = [enclosure(v, ctx) for v in values]
        primals = [untag(v, ctx) for v in values]
    total = enclosure(start, ctx)
    for box in boxes:
        total = _add(total, box)
    return tag(sum(primals, untag(start, ctx)), ctx, total)


# -- comparisons ----------------------------------------------------------------------

def _decide(always, never):
    """A comparison rule: True when it holds for every pair of points,
    False when for none, else :class:`Undecidable`."""
    def rule(ctx, f, a, b):
        if not (istagged(a, ctx) or istagged(b, ctx)):
            return OverdubInstead
        x, y = enclosure(a, ctx), enclosure(b, ctx)
        if always(x, y):
            return True
        if never(x, y):
            return False
        raise Undecidable(
            f"{f.__name__}({x!r}, {y!r}) holds for some points of the inputs and not for "
            "others; the branch that depends on it is not the same for every input")
    return rule


_COMPARISONS = {
    operator.lt: (lambda x, y: x.hi < y.lo, lambda x, y: x.lo >= y.hi),
    operator.le: (lambda x, y: x.hi <= y.lo, lambda x, y: x.lo > y.hi),
    operator.gt: (lambda x, y: x.lo > y.hi, lambda x, y: x.hi <= y.lo),
    operator.ge: (lambda x, y: x.lo >= y.hi, lambda x, y: x.hi < y.lo),
    operator.eq: (lambda x, y: x.lo == x.hi == y.lo == y.hi,
                  lambda x, y: x.hi < y.lo or y.hi < x.lo),
    operator.ne: (lambda x, y: x.hi < y.lo or y.hi < x.lo,
                  lambda x, y: x.lo == x.hi == y.lo == y.hi),
}
for _callee, (_always, _never) in _COMPARISONS.items():
    cassette.execute.register(IntervalArithmetic, _callee)(_decide(_always, _never))


def enclose(f, *boxes):
    """An interval enclosing ``f(*xs)`` for every ``xs`` in ``boxes`` (each
    an :class:`Interval` or a number).  ``f`` must return a number."""
    ctx = enabletagging(IntervalArithmetic(), f)
    intervals = [b if isinstance(b, Interval) else Interval(b, b) for b in boxes]
    args = [tag(box.midpoint, ctx, box) for box in intervals]
    out = cassette.overdub(ctx, lambda *values: f(*values), *args)
    return enclosure(out, ctx)


if __name__ == "__main__":
    print("x^2 - 2x on [0, 3]     ", enclose(lambda x: x * x - 2 * x, Interval(0, 3)))
    print("(x-1)^2 on [0, 3]      ", enclose(lambda x: (x - 1) ** 2, Interval(0, 3)))
    print("sin(x) on [1, 2]       ", enclose(math.sin, Interval(1, 2)))
    try:
        enclose(lambda x: x if x > 1 else -x, Interval(0, 3))
    except Undecidable as error:
        print("branch on x > 1, x in [0, 3]:", error)
