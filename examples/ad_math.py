"""The AD example's rules for Python's numbers: ``math``, the builtins that
compute numbers (``abs``, ``max``, ``min``, ``pow``, ``round``, ``int``,
``float``, ``complex``) and the operators ``%`` and ``//``.

Every function of ``math`` that returns a number has a rule; those with
integer results or steps (``floor``, ``ceil``, ``trunc``, ``round``,
``int``, ``//``) have derivative zero wherever they have one, and return
untagged values.  What is left (``modf``, ``frexp``, ``factorial`` …)
raises :class:`cassette.MetadataLossError` under the strict context.
Imported by ``ad.py``; see its docstring.
"""

import math
import operator

import cassette
from cassette import tag, untag

from ad import (NO_TANGENT, ForwardAD, NotDifferentiable, _elements, _pair, _power_rule,
                differentiable, tangent, unary)

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_ROOT_PI = 2.0 / math.sqrt(math.pi)


def _sign(x):
    return math.copysign(1.0, x)


def _abs_rule(x, dx):
    if isinstance(x, complex):
        return (x.conjugate() * dx).real / abs(x)
    return _sign(x) * dx


for _callee, _rule in [
        (operator.neg, lambda x, dx: -dx),
        (operator.pos, lambda x, dx: dx),
        (abs, _abs_rule),
        (operator.abs, _abs_rule),
        (float, lambda x, dx: dx),
        (math.fabs, lambda x, dx: _sign(x) * dx),
        (math.sin, lambda x, dx: math.cos(x) * dx),
        (math.cos, lambda x, dx: -math.sin(x) * dx),
        (math.tan, lambda x, dx: dx / (math.cos(x) * math.cos(x))),
        (math.asin, lambda x, dx: dx / math.sqrt(1 - x * x)),
        (math.acos, lambda x, dx: -dx / math.sqrt(1 - x * x)),
        (math.atan, lambda x, dx: dx / (1 + x * x)),
        (math.sinh, lambda x, dx: math.cosh(x) * dx),
        (math.cosh, lambda x, dx: math.sinh(x) * dx),
        (math.tanh, lambda x, dx: (1 - math.tanh(x) ** 2) * dx),
        (math.asinh, lambda x, dx: dx / math.sqrt(x * x + 1)),
        (math.acosh, lambda x, dx: dx / math.sqrt(x * x - 1)),
        (math.atanh, lambda x, dx: dx / (1 - x * x)),
        (math.exp, lambda x, dx: math.exp(x) * dx),
        (math.expm1, lambda x, dx: math.exp(x) * dx),
        (math.sqrt, lambda x, dx: dx / (2 * math.sqrt(x))),
        (math.log10, lambda x, dx: dx / (x * _LN10)),
        (math.log2, lambda x, dx: dx / (x * _LN2)),
        (math.log1p, lambda x, dx: dx / (1 + x)),
        (math.erf, lambda x, dx: _TWO_OVER_ROOT_PI * math.exp(-x * x) * dx),
        (math.erfc, lambda x, dx: -_TWO_OVER_ROOT_PI * math.exp(-x * x) * dx),
        (math.gamma, lambda x, dx: math.gamma(x) * digamma(x) * dx),
        (math.lgamma, lambda x, dx: digamma(x) * dx),
        (math.degrees, lambda x, dx: math.degrees(dx)),
        (math.radians, lambda x, dx: math.radians(dx))]:
    unary(_callee, _rule)
if hasattr(math, "cbrt"):                                   # 3.11+
    unary(math.cbrt, lambda x, dx: dx / (3 * math.cbrt(x) ** 2))
    unary(math.exp2, lambda x, dx: math.exp2(x) * _LN2 * dx)


def digamma(x):
    """ψ(x) = Γ'(x)/Γ(x), for ``lgamma``'s and ``gamma``'s rules (``math``
    has none): the recurrence ψ(x) = ψ(x+1) − 1/x up to x ≥ 6, then the
    asymptotic series; reflection below zero."""
    if x <= 0 and x == math.floor(x):
        return math.nan
    if x < 0:
        return digamma(1 - x) - math.pi / math.tan(math.pi * x)
    shift = 0.0
    while x < 6:
        shift -= 1 / x
        x += 1
    inverse_square = 1 / (x * x)
    series = inverse_square * (1 / 12 - inverse_square * (1 / 120 - inverse_square * (
        1 / 252 - inverse_square * (1 / 240 - inverse_square * (1 / 132)))))
    return shift + math.log(x) - 0.5 / x - series


# -- zero derivative wherever there is one: the result carries no tangent --------

def _constant(ctx, f, *args, **keywords):
    return f(*[untag(a, ctx) for a in args], **{k: untag(v, ctx) for k, v in keywords.items()})


for _callee in (int, round, math.floor, math.ceil, math.trunc, operator.floordiv,
                operator.ifloordiv):
    cassette.execute.register(ForwardAD, _callee)(_constant)


# -- functions of several numbers ---------------------------------------------------

def _log_rule(p, t):
    """``log(x)`` and ``log(x, base)``."""
    if len(p) == 1:
        return t[0] / p[0]
    x, base = p
    rule = t[0] / (x * math.log(base))
    if t[1] is not NO_TANGENT:
        rule = rule - t[1] * math.log(x) / (base * math.log(base) ** 2)
    return rule


def _mod_rule(p, t):
    """``x % y`` is ``x - floor(x / y) * y``."""
    x, y = p
    return t[0] - math.floor(x / y) * t[1] if t[1] is not NO_TANGENT else t[0]


def _complex_rule(p, t):
    if len(p) == 1:
        return complex(t[0])
    return complex(t[0]) + 1j * complex(t[1])


def _hypot_rule(p, t):
    h = math.hypot(*p)
    return sum(x * dx for x, dx in zip(p, t)) / h


def _pow_rule(p, t):
    if len(p) != 2:
        raise NotDifferentiable("pow(x, y, modulus) has no derivative")
    return _power_rule(p[0], p[1], t[0], t[1])


for _callee, _rule in [
        (math.log, _log_rule),
        (operator.mod, _mod_rule),
        (operator.imod, _mod_rule),
        (complex, _complex_rule),
        (math.hypot, _hypot_rule),
        (math.pow, lambda p, t: _power_rule(p[0], p[1], t[0], t[1])),
        (pow, _pow_rule),
        (math.atan2, lambda p, t: (p[1] * t[0] - p[0] * t[1]) / (p[0] ** 2 + p[1] ** 2)),
        (math.copysign, lambda p, t: _sign(p[0]) * _sign(p[1]) * t[0]),
        (math.fmod, lambda p, t: t[0] - math.trunc(p[0] / p[1]) * t[1]),
        (math.remainder, lambda p, t: t[0] - round(p[0] / p[1]) * t[1]),
        (math.ldexp, lambda p, t: math.ldexp(t[0], p[1]))]:
    differentiable(_callee, _rule)
if hasattr(math, "fma"):                                    # 3.13+
    differentiable(math.fma, lambda p, t: t[0] * p[1] + p[0] * t[1] + t[2])


# -- functions of iterables ------------------------------------------------------------

def _tagged(ctx, value, t):
    return value if t is NO_TANGENT else tag(value, ctx, t)


@cassette.execute.register(ForwardAD, math.fsum)
def _fsum(ctx, f, iterable):
    primals, tangents = _elements(iterable, ctx)
    return _tagged(ctx, math.fsum(primals), math.fsum(t for t in tangents))


@cassette.execute.register(ForwardAD, math.prod)
def _prod(ctx, f, iterable, *, start=1):
    """The product rule, term by term: d(a·b) = da·b + a·db."""
    primals, tangents = _elements(iterable, ctx)
    value, t = untag(start, ctx), tangent(start, ctx)
    for x, dx in zip(primals, tangents):
        t = t * x + value * dx
        value = value * x
    return _tagged(ctx, value, t)


@cassette.execute.register(ForwardAD, math.dist)
def _dist(ctx, f, p, q):
    ps, dps = _elements(p, ctx)
    qs, dqs = _elements(q, ctx)
    d = math.dist(ps, qs)
    return _tagged(ctx, d, sum((a - b) * (da - db) for a, b, da, db in zip(ps, qs, dps, dqs)) / d)


if hasattr(math, "sumprod"):                                # 3.12+
    @cassette.execute.register(ForwardAD, math.sumprod)
    def _sumprod(ctx, f, p, q):
        ps, dps = _elements(p, ctx)
        qs, dqs = _elements(q, ctx)
        return _tagged(ctx, math.sumprod(ps, qs),
                       sum(da * b + a * db for a, b, da, db in zip(ps, qs, dps, dqs)))


@cassette.execute.register(ForwardAD, math.modf, cassette.Tagged)
def _modf(ctx, f, x):
    """``modf(x)``: the fraction's tangent is ``x``'s, the integer part's zero."""
    fraction, whole = f(untag(x, ctx))
    return cassette.overdub(ctx, _pair, _tagged(ctx, fraction, tangent(x, ctx)), whole)


@cassette.execute.register(ForwardAD, math.frexp, cassette.Tagged)
def _frexp(ctx, f, x):
    """``frexp(x) = (m, e)``, ``x = m·2**e``: ``dm = dx / 2**e``."""
    mantissa, exponent = f(untag(x, ctx))
    return cassette.overdub(ctx, _pair, _tagged(ctx, mantissa, math.ldexp(tangent(x, ctx),
                                                                             -exponent)),
                            exponent)


def _extremum(ctx, f, *args, key=None, **default):
    """``max``/``min`` of numbers (piecewise): the chosen argument, with its
    tangent — the first of equal ones, as ``f`` chooses."""
    if len(args) == 1:
        values, tangents = _elements(args[0], ctx)
    else:
        values = [untag(a, ctx) for a in args]
        tangents = [tangent(a, ctx) for a in args]
    if not values:
        return f(values, **default)
    keys = values if key is None else [key(v) for v in values]
    best = 0
    for index in range(1, len(keys)):
        if (keys[index] > keys[best]) if f is max else (keys[index] < keys[best]):
            best = index
    return _tagged(ctx, values[best], tangents[best])


for _callee in (max, min):
    cassette.execute.register(ForwardAD, _callee)(_extremum)

