"""Forward-mode automatic differentiation on cassette's tagging API.

``derivative(f, x)`` runs ``f`` unmodified under a tagging context: ``x``
carries its tangent (1.0) as metadata, each differentiable operation's
``execute`` handler computes the primal result and re-tags it with the
tangent the chain rule gives, and every other operation sees primal values
(cassette untags arguments of primitives).  Each ``derivative`` call makes
its own tag, so a derivative inside a derivative never confuses the two
perturbations: the inner handlers' arithmetic is itself seen — and
differentiated — by the outer context.

Values stored into lists, dicts, objects and module globals keep their
tangents (cassette propagates metadata through the program's data, which
itself holds primal values); ``sum`` has a rule that reads a list's
per-element tangents with ``metameta``.  ``directional_derivative(f, xs, v)``
differentiates functions of lists (and returning lists).

Only the public API is used: ``enabletagging``, ``tag``, ``untag``,
``istagged``, ``metadata``, ``metameta``, ``execute.register``, ``overdub``.

Run it: ``python examples/ad.py``.
"""

import math
import operator

import numpy as np

import cassette
from cassette import NoMetaData, OverdubInstead, enabletagging, istagged, metadata, tag, untag

__all__ = ["ForwardAD", "NO_TANGENT", "derivative", "differentiable", "directional_derivative",
           "tangent"]


class ForwardAD(cassette.Context):
    """Tangents are floats, carried by ints and floats (numpy's float
    scalars included); a numpy array's tangent is an array of its shape."""

    @classmethod
    def metadatatype(cls, T):
        if issubclass(T, (int, float, np.floating, np.integer)) and T is not bool:
            return float
        if issubclass(T, np.ndarray):
            return np.ndarray
        return None


#: The tangent of a value that carries none (compared by identity: a rule
#: can skip a term whose tangent is structurally zero).
NO_TANGENT = 0.0


def tangent(value, ctx):
    """The tangent ``value`` carries w.r.t. ``ctx`` (``NO_TANGENT`` if none)."""
    data = metadata(value, ctx)
    return NO_TANGENT if data is cassette.NoMetaData else data


def differentiable(callee, chain_rule):
    """Register ``callee`` as differentiable: ``chain_rule(primals,
    tangents)`` is the tangent of ``callee(*primals)``."""

    @cassette.execute.register(ForwardAD, callee)
    def propagate(ctx, f, *args):
        # This runs for every arithmetic operation: the one- and
        # two-argument cases are spelled out.
        if len(args) == 2:
            a, b = args
            ta, tb = metadata(a, ctx), metadata(b, ctx)
            if ta is NoMetaData and tb is NoMetaData:
                return OverdubInstead      # nothing to differentiate here
            primals = (untag(a, ctx), untag(b, ctx))
            tangents = (NO_TANGENT if ta is NoMetaData else ta,
                        NO_TANGENT if tb is NoMetaData else tb)
        elif len(args) == 1:
            ta = metadata(args[0], ctx)
            if ta is NoMetaData:
                return OverdubInstead
            primals, tangents = (untag(args[0], ctx),), (ta,)
        else:
            tangents = [metadata(a, ctx) for a in args]
            if all(t is NoMetaData for t in tangents):
                return OverdubInstead
            primals = [untag(a, ctx) for a in args]
            tangents = [NO_TANGENT if t is NoMetaData else t for t in tangents]
        return tag(f(*primals), ctx, chain_rule(primals, tangents))

    return propagate


def _pow_rule(p, t):
    base, exponent = p
    rule = t[0] * exponent * base ** (exponent - 1)
    if t[1] is not NO_TANGENT:         # a varying exponent (needs base > 0)
        rule = rule + t[1] * base ** exponent * math.log(base)
    return rule


_RULES = {
    operator.add: lambda p, t: t[0] + t[1],
    operator.iadd: lambda p, t: t[0] + t[1],
    operator.sub: lambda p, t: t[0] - t[1],
    operator.isub: lambda p, t: t[0] - t[1],
    operator.mul: lambda p, t: t[0] * p[1] + p[0] * t[1],
    operator.imul: lambda p, t: t[0] * p[1] + p[0] * t[1],
    operator.truediv: lambda p, t: (t[0] * p[1] - p[0] * t[1]) / (p[1] * p[1]),
    operator.itruediv: lambda p, t: (t[0] * p[1] - p[0] * t[1]) / (p[1] * p[1]),
    operator.pow: _pow_rule,
    operator.ipow: _pow_rule,
    operator.neg: lambda p, t: -t[0],
    operator.pos: lambda p, t: t[0],
    abs: lambda p, t: t[0] if p[0] >= 0 else -t[0],
    float: lambda p, t: t[0],
    math.sin: lambda p, t: math.cos(p[0]) * t[0],
    math.cos: lambda p, t: -math.sin(p[0]) * t[0],
    math.tan: lambda p, t: t[0] / (math.cos(p[0]) * math.cos(p[0])),
    math.exp: lambda p, t: math.exp(p[0]) * t[0],
    math.log: lambda p, t: t[0] / p[0],
    math.sqrt: lambda p, t: t[0] / (2 * math.sqrt(p[0])),
    math.atan: lambda p, t: t[0] / (1 + p[0] * p[0]),
    math.tanh: lambda p, t: (1 - math.tanh(p[0]) ** 2) * t[0],
}


def _add(a, b):
    """``a + b`` of two tangents, either possibly ``NO_TANGENT``."""
    if a is NO_TANGENT:
        return b
    if b is NO_TANGENT:
        return a
    return a + b


def _matmul_rule(p, t):
    left = NO_TANGENT if t[0] is NO_TANGENT else t[0] @ p[1]
    right = NO_TANGENT if t[1] is NO_TANGENT else p[0] @ t[1]
    return _add(left, right)


def _linear(f):
    """The rule of a function linear in its first argument (``sum``,
    ``mean``, ``transpose`` …): the function applied to the tangent."""
    def rule(p, t, **keywords):
        return NO_TANGENT if t[0] is NO_TANGENT else f(t[0], *p[1:], **keywords)
    return rule


_RULES.update({
    operator.matmul: _matmul_rule,
    np.exp: lambda p, t: np.exp(p[0]) * t[0],
    np.log: lambda p, t: t[0] / p[0],
    np.sin: lambda p, t: np.cos(p[0]) * t[0],
    np.cos: lambda p, t: -np.sin(p[0]) * t[0],
    np.tanh: lambda p, t: (1 - np.tanh(p[0]) ** 2) * t[0],
    np.sqrt: lambda p, t: t[0] / (2 * np.sqrt(p[0])),
    np.negative: lambda p, t: -t[0],
    np.add: lambda p, t: _add(t[0], t[1]),
    np.multiply: lambda p, t: t[0] * p[1] + p[0] * t[1],
    np.dot: _matmul_rule,
    operator.getitem: _linear(operator.getitem),
})
for _callee, _rule in _RULES.items():
    differentiable(_callee, _rule)


def linear(callee, apply=None):
    """Register ``callee`` — linear in its first argument, which is the
    only differentiated one — so that the tangent is ``apply(tangent,
    *rest, **keywords)`` (``callee`` itself by default)."""
    apply = callee if apply is None else apply

    @cassette.execute.register(ForwardAD, callee)
    def propagate(ctx, f, first, *rest, **keywords):
        if not istagged(first, ctx):
            return OverdubInstead
        value = f(untag(first, ctx), *[untag(r, ctx) for r in rest], **keywords)
        t = tangent(first, ctx)
        return tag(value, ctx, apply(t, *rest, **keywords) if t is not NO_TANGENT
                   else NO_TANGENT)

    return propagate


for _callee in (np.sum, np.mean, np.transpose, np.ravel, np.reshape, np.ndarray.sum,
                np.ndarray.mean, np.ndarray.reshape, np.ndarray.ravel):
    linear(_callee)
linear(np.ndarray.transpose, np.transpose)


@cassette.execute.register(ForwardAD, getattr)
def _attribute(ctx, f, obj, name, *default):
    """``a.T`` of a tagged array is linear too."""
    if name != "T" or not istagged(obj, ctx):
        return OverdubInstead
    t = tangent(obj, ctx)
    return tag(untag(obj, ctx).T, ctx, t.T if t is not NO_TANGENT else NO_TANGENT)


def _elements(iterable, ctx):
    """``(primals, tangents)`` of what ``iterable`` holds.  A list or tuple
    built in the run holds primal values, its tangents are its components'
    metadata (``metameta``); a generator, driven here, yields tagged values."""
    components = cassette.metameta(iterable, ctx)
    values = list(iterable)
    if isinstance(components, list) and len(components) == len(values):
        tangents = [NO_TANGENT if m.data is cassette.NoMetaData else m.data
                    for m in components]
        return values, tangents
    return [untag(v, ctx) for v in values], [tangent(v, ctx) for v in values]


@cassette.execute.register(ForwardAD, sum)
def _sum(ctx, f, iterable, start=0):
    """``sum`` of numbers: the sum of the tangents."""
    primals, tangents = _elements(iterable, ctx)
    total = sum(primals, untag(start, ctx))
    total_tangent = tangent(start, ctx)
    for t in tangents:
        if t is not NO_TANGENT:
            total_tangent = total_tangent + t
    if total_tangent is NO_TANGENT:
        return total
    return tag(total, ctx, total_tangent)


def derivative(f, x):
    """d f / d x at ``x``, for a function of one number."""
    ctx = enabletagging(ForwardAD(), f)
    # ``f`` is called from overdubbed code, so the call of ``f`` itself is
    # an operation of the context (a primitive such as math.sin included).
    out = cassette.overdub(ctx, lambda value: f(value), tag(x, ctx, 1.0))
    return tangent(out, ctx)


def directional_derivative(f, xs, direction):
    """The derivative of ``f`` at ``xs`` — a list of numbers or a numpy
    array (tagged as a whole, its tangent an array) — along ``direction``:
    a number for a function returning a number, a list for one returning a
    list, an array for one returning an array (a Jacobian-vector product)."""
    ctx = enabletagging(ForwardAD(), f)
    if isinstance(xs, np.ndarray):
        point = tag(xs, ctx, np.asarray(direction, dtype=float))
    else:
        point = [tag(x, ctx, float(d)) for x, d in zip(xs, direction)]
    out = cassette.overdub(ctx, lambda values: f(values), point)
    if isinstance(out, (list, tuple)):
        components = cassette.metameta(out, ctx)
        if components is cassette.NoMetaMeta:
            return [NO_TANGENT] * len(out)
        return [NO_TANGENT if m.data is cassette.NoMetaData else m.data for m in components]
    return tangent(out, ctx)


if __name__ == "__main__":
    print("D(sin, 1)                      =", derivative(math.sin, 1.0), "  cos(1) =", math.cos(1.0))
    print("D(x -> D(sin, x), 1)           =", derivative(lambda x: derivative(math.sin, x), 1.0),
          "  -sin(1) =", -math.sin(1.0))
    print("D(x -> x*D(y -> x*y, 1), 2)    =",
          derivative(lambda x: x * derivative(lambda y: x * y, 1), 2))
