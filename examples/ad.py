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

__all__ = ["ForwardAD", "NO_TANGENT", "binary", "derivative", "differentiable",
           "directional_derivative", "linear", "tangent", "unary"]


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
        tangents = [metadata(a, ctx) for a in args]
        if all(t is NoMetaData for t in tangents):
            return OverdubInstead          # nothing to differentiate here
        primals = [untag(a, ctx) for a in args]
        tangents = [NO_TANGENT if t is NoMetaData else t for t in tangents]
        return tag(f(*primals), ctx, chain_rule(primals, tangents))

    return propagate


#: The argument types of a rule of two numbers: at least one of them tagged
#: by the running context (when both are, both registrations match; they
#: name the same handler).  An operation on untagged numbers never calls the
#: rule — which spares a numeric program's many operations on constants a
#: Python call each.
_EITHER_TAGGED = ((cassette.Tagged, object), (object, cassette.Tagged))


def _register_binary(callee, handler):
    for argtypes in _EITHER_TAGGED:
        cassette.execute.register(ForwardAD, callee, *argtypes)(handler)


def binary(callee, rule):
    """Register ``callee`` — an operation of two numbers — as
    differentiable: ``rule(x, y, dx, dy)`` is the tangent of ``callee(x,
    y)``, a missing tangent being ``NO_TANGENT``."""

    def propagate(ctx, f, a, b):
        # This runs for every arithmetic operation of the program: it is
        # written for speed (no tuples, no loops).
        da = metadata(a, ctx)
        db = metadata(b, ctx)
        if da is NoMetaData:
            if db is NoMetaData:
                return OverdubInstead      # tagged without a tangent
            da = NO_TANGENT
        elif db is NoMetaData:
            db = NO_TANGENT
        x = untag(a, ctx)
        y = untag(b, ctx)
        return tag(f(x, y), ctx, rule(x, y, da, db))

    _register_binary(callee, propagate)
    return propagate


def _power_rule(x, y, dx, dy):
    tangent_ = dx * y * x ** (y - 1)
    if dy is not NO_TANGENT:            # a varying exponent (needs x > 0)
        tangent_ = tangent_ + dy * x ** y * math.log(x)
    return tangent_


_ADD, _IADD, _SUB, _ISUB = operator.add, operator.iadd, operator.sub, operator.isub
_MUL, _IMUL, _DIV, _IDIV = operator.mul, operator.imul, operator.truediv, operator.itruediv


# The handlers of ``+ - * /`` and their in-place forms: :func:`binary`'s
# handler with the four rules written inline (they run for nearly every
# operation on tagged numbers: one Python frame instead of two), one for
# each operand the context tagged and one for both (dispatch tells which,
# from the operands' types, sparing the API calls a plain operand needs
# none of).  The operators themselves rather than calls of ``f``, except
# for the in-place forms (which may change the left operand, an array say,
# in place).

def _arithmetic(ctx, f, a, b):
    """``f(a, b)``, both tagged by ``ctx``."""
    da = metadata(a, ctx)
    db = metadata(b, ctx)
    if da is NoMetaData:
        if db is NoMetaData:
            return OverdubInstead      # tagged without a tangent
        da = NO_TANGENT
    elif db is NoMetaData:
        db = NO_TANGENT
    x = untag(a, ctx)
    y = untag(b, ctx)
    if f is _MUL:
        return tag(x * y, ctx, da * y + x * db)
    if f is _ADD:
        return tag(x + y, ctx, da + db)
    if f is _SUB:
        return tag(x - y, ctx, da - db)
    if f is _DIV:
        return tag(x / y, ctx, (da * y - x * db) / (y * y))
    if f is _IMUL:
        return tag(f(x, y), ctx, da * y + x * db)
    if f is _IADD:
        return tag(f(x, y), ctx, da + db)
    if f is _ISUB:
        return tag(f(x, y), ctx, da - db)
    return tag(f(x, y), ctx, (da * y - x * db) / (y * y))


def _arithmetic_left(ctx, f, a, y):
    """``f(a, y)``, ``a`` tagged by ``ctx``, ``y`` not: its tangent is 0."""
    da = metadata(a, ctx)
    if da is NoMetaData:
        return OverdubInstead          # tagged without a tangent
    x = untag(a, ctx)
    if f is _MUL:
        return tag(x * y, ctx, da * y)
    if f is _ADD:
        return tag(x + y, ctx, da)
    if f is _SUB:
        return tag(x - y, ctx, da)
    if f is _DIV:
        return tag(x / y, ctx, da / y)
    if f is _IMUL:
        return tag(f(x, y), ctx, da * y)
    if f is _IDIV:
        return tag(f(x, y), ctx, da / y)
    return tag(f(x, y), ctx, da)        # += and -=


def _arithmetic_right(ctx, f, x, b):
    """``f(x, b)``, ``b`` tagged by ``ctx``, ``x`` not: its tangent is 0."""
    db = metadata(b, ctx)
    if db is NoMetaData:
        return OverdubInstead          # tagged without a tangent
    y = untag(b, ctx)
    if f is _MUL:
        return tag(x * y, ctx, x * db)
    if f is _ADD:
        return tag(x + y, ctx, db)
    if f is _SUB:
        return tag(x - y, ctx, -db)
    if f is _DIV:
        return tag(x / y, ctx, -(x * db) / (y * y))
    if f is _IMUL:
        return tag(f(x, y), ctx, x * db)
    if f is _IADD:
        return tag(f(x, y), ctx, db)
    if f is _ISUB:
        return tag(f(x, y), ctx, -db)
    return tag(f(x, y), ctx, -(x * db) / (y * y))


_TAGGED = cassette.Tagged
for _callee in (_ADD, _IADD, _SUB, _ISUB, _MUL, _IMUL, _DIV, _IDIV):
    cassette.execute.register(ForwardAD, _callee, _TAGGED, _TAGGED)(_arithmetic)
    cassette.execute.register(ForwardAD, _callee, _TAGGED, object)(_arithmetic_left)
    cassette.execute.register(ForwardAD, _callee, object, _TAGGED)(_arithmetic_right)
for _callee in (operator.pow, operator.ipow):
    binary(_callee, _power_rule)


def unary(callee, rule):
    """Register ``callee`` — a function of one number — as differentiable:
    ``rule(x, dx)`` is the tangent of ``callee(x)``."""

    @cassette.execute.register(ForwardAD, callee, cassette.Tagged)
    def propagate(ctx, f, a):
        da = metadata(a, ctx)
        if da is NoMetaData:               # tagged without a tangent
            return OverdubInstead
        x = untag(a, ctx)
        return tag(f(x), ctx, rule(x, da))

    return propagate


for _callee, _rule in [
        (operator.neg, lambda x, dx: -dx),
        (operator.pos, lambda x, dx: dx),
        (abs, lambda x, dx: dx if x >= 0 else -dx),
        (float, lambda x, dx: dx),
        (math.sin, lambda x, dx: math.cos(x) * dx),
        (math.cos, lambda x, dx: -math.sin(x) * dx),
        (math.tan, lambda x, dx: dx / (math.cos(x) * math.cos(x))),
        (math.exp, lambda x, dx: math.exp(x) * dx),
        (math.sqrt, lambda x, dx: dx / (2 * math.sqrt(x))),
        (math.atan, lambda x, dx: dx / (1 + x * x)),
        (math.tanh, lambda x, dx: (1 - math.tanh(x) ** 2) * dx)]:
    unary(_callee, _rule)


def _log_rule(p, t):
    """``log(x)`` and ``log(x, base)``."""
    if len(p) == 1:
        return t[0] / p[0]
    x, base = p
    rule = t[0] / (x * math.log(base))
    if t[1] is not NO_TANGENT:
        rule = rule - t[1] * math.log(x) / (base * math.log(base) ** 2)
    return rule


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


_RULES = {
    math.log: _log_rule,
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
}
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


# Only tagged arrays are dispatched here (``cassette.Tagged[np.ndarray]``):
# the program's other subscripts and attribute loads never call a handler.
TAGGED_ARRAY = cassette.Tagged[np.ndarray]


@cassette.execute.register(ForwardAD, operator.getitem, TAGGED_ARRAY, object)
def _item(ctx, f, container, key):
    """``a[key]`` of a tagged array is linear: its tangent is the tangent's
    ``[key]``."""
    t = metadata(container, ctx)
    if t is NoMetaData:                # tagged without a tangent
        return OverdubInstead
    key = untag(key, ctx)
    return tag(f(untag(container, ctx), key), ctx, NO_TANGENT if t is NO_TANGENT else t[key])


@cassette.execute.register(ForwardAD, getattr, TAGGED_ARRAY, object, cassette.Vararg(object))
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


def _call(f, argument):
    """``f(argument)``, overdubbed: the call of ``f`` itself is then an
    operation of the context (a primitive such as math.sin included).  A
    module-level function, not a lambda made per call: its rewritten body
    is made once and kept."""
    return f(argument)


def derivative(f, x):
    """d f / d x at ``x``, for a function of one number."""
    ctx = enabletagging(ForwardAD(), f)
    out = cassette.overdub(ctx, _call, f, tag(x, ctx, 1.0))
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
    out = cassette.overdub(ctx, _call, f, point)
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
