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
differentiates functions of lists (and returning lists) and of numpy arrays.

**Strict.**  ``ForwardAD.metadata_loss = "raise"``: an operation on a value
with a tangent that has no rule raises ``cassette.MetadataLossError``
naming it, and so does a rule asked for what it cannot differentiate
(:class:`NotDifferentiable`) — a derivative is right or it is an error,
never a silently dropped term.  The rules: this module has the
arithmetic operators and ``sum``; ``ad_math.py`` the rest of Python's
numbers (``math``, ``abs``, ``max``/``min``, ``int``, ``round``, ``%`` …)
and ``ad_numpy.py`` numpy's common surface (every elementwise ufunc with
``out=`` and ``where=``, reductions with ``axis``/``keepdims``, copies,
conversions, stores, iteration, ``tolist``, ``np.linalg`` and
``np.einsum``).  Both are imported at the end of this module.

Only the public API is used: ``enabletagging``, ``tag``, ``untag``,
``istagged``, ``metadata``, ``metameta``, ``execute.register``, ``overdub``,
``MetadataLossError``.

Run it: ``python examples/ad.py``.
"""

import math
import operator
import sys

import numpy as np

import cassette
from cassette import (MetadataLossError, NoMetaData, OverdubInstead, enabletagging, istagged,
                      metadata, tag, untag)

if __name__ == "__main__":
    # The rule modules import this one by name: run as a script, it is
    # that module too (not a second copy with a ForwardAD of its own).
    sys.modules.setdefault("ad", sys.modules[__name__])

__all__ = ["ForwardAD", "NO_TANGENT", "NotDifferentiable", "binary", "derivative",
           "differentiable", "directional_derivative", "tangent", "unary"]


class ForwardAD(cassette.Context):
    """Tangents are floats, carried by ints and floats (numpy's float
    scalars included), complex tangents by complex numbers; a numpy
    array's tangent is an array of its shape.  Strict: an operation with no
    rule on a value with a tangent raises :class:`cassette.MetadataLossError`."""

    metadata_loss = "raise"

    @classmethod
    def metadatatype(cls, T):
        if issubclass(T, (int, float, np.floating, np.integer)) and T is not bool:
            return float
        if issubclass(T, (complex, np.complexfloating)):
            return complex
        if issubclass(T, np.ndarray):
            return np.ndarray
        return None


class NotDifferentiable(MetadataLossError):
    """A rule met what it cannot differentiate (a tangent it would have to
    store where none can be kept, an option it has no rule for)."""


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
        t = rule(x, y, da, db)          # first: an in-place f may change x
        return tag(f(x, y), ctx, t)

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

_ndarray = np.ndarray


def _tag_result(value, ctx, t):
    """``tag(value, ctx, t)``, an array's tangent of its shape (a number's
    tangent broadcast: ``array + x`` of a tagged number ``x``)."""
    if type(value) is _ndarray and (type(t) is not _ndarray or t.shape != value.shape):
        t = np.array(np.broadcast_to(t, value.shape), dtype=np.result_type(value, 1.0))
    return tag(value, ctx, t)


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
        return _tag_result(x * y, ctx, da * y + x * db)
    if f is _ADD:
        return _tag_result(x + y, ctx, da + db)
    if f is _SUB:
        return _tag_result(x - y, ctx, da - db)
    if f is _DIV:
        return _tag_result(x / y, ctx, (da * y - x * db) / (y * y))
    # In place, f may change x (an array): the tangent is taken first.
    if f is _IMUL:
        t = da * y + x * db
        return _tag_result(f(x, y), ctx, t)
    if f is _IADD:
        return _tag_result(f(x, y), ctx, da + db)
    if f is _ISUB:
        return _tag_result(f(x, y), ctx, da - db)
    t = (da * y - x * db) / (y * y)
    return _tag_result(f(x, y), ctx, t)


def _arithmetic_left(ctx, f, a, y):
    """``f(a, y)``, ``a`` tagged by ``ctx``, ``y`` not: its tangent is 0."""
    da = metadata(a, ctx)
    if da is NoMetaData:
        return OverdubInstead          # tagged without a tangent
    x = untag(a, ctx)
    if f is _MUL:
        return _tag_result(x * y, ctx, da * y)
    if f is _ADD:
        return _tag_result(x + y, ctx, da)
    if f is _SUB:
        return _tag_result(x - y, ctx, da)
    if f is _DIV:
        return _tag_result(x / y, ctx, da / y)
    if f is _IMUL:
        return _tag_result(f(x, y), ctx, da * y)
    if f is _IDIV:
        return _tag_result(f(x, y), ctx, da / y)
    return _tag_result(f(x, y), ctx, da)        # += and -=


def _arithmetic_right(ctx, f, x, b):
    """``f(x, b)``, ``b`` tagged by ``ctx``, ``x`` not: its tangent is 0."""
    db = metadata(b, ctx)
    if db is NoMetaData:
        return OverdubInstead          # tagged without a tangent
    y = untag(b, ctx)
    if f is _MUL:
        return _tag_result(x * y, ctx, x * db)
    if f is _ADD:
        return _tag_result(x + y, ctx, db)
    if f is _SUB:
        return _tag_result(x - y, ctx, -db)
    if f is _DIV:
        return _tag_result(x / y, ctx, -(x * db) / (y * y))
    # In place, f may change x (an array): the tangent is taken first.
    if f is _IMUL:
        t = x * db
        return _tag_result(f(x, y), ctx, t)
    if f is _IADD:
        return _tag_result(f(x, y), ctx, db)
    if f is _ISUB:
        return _tag_result(f(x, y), ctx, -db)
    t = -(x * db) / (y * y)
    return _tag_result(f(x, y), ctx, t)


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


def _pair(first, second):
    """``(first, second)``, for a rule to run under its context
    (``cassette.overdub(ctx, _pair, a, b)``): the tuple built then keeps each
    element's tangent, as a tuple a program builds does — a rule of a
    function of two results (``math.modf``, ``np.divmod``) returns it."""
    return (first, second)


def _name(callee):
    """How an error names ``callee``."""
    module = getattr(callee, "__module__", None) or ""
    name = getattr(callee, "__qualname__", None) or getattr(callee, "__name__", repr(callee))
    return f"{module}.{name}" if module and module != "builtins" else name


def _elements(iterable, ctx):
    """``(primals, tangents)`` of what ``iterable`` holds.  A list or tuple
    built in the run holds primal values, its tangents are its components'
    metadata (``metameta``); a generator, driven here, yields tagged values;
    a tagged array gives its rows and theirs."""
    if istagged(iterable, ctx):
        # A tagged array (or number): its elements along the first axis,
        # each with the matching part of the tangent.
        values, t = list(untag(iterable, ctx)), tangent(iterable, ctx)
        return values, (list(t) if t is not NO_TANGENT else [NO_TANGENT] * len(values))
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
            components = [cassette.Meta()] * len(out)
        return [_no_variation(value) if m.data is cassette.NoMetaData else m.data
                for value, m in zip(out, components)]
    if isinstance(out, np.ndarray) and not istagged(out, ctx):
        return _no_variation(out)
    return tangent(out, ctx)


def _no_variation(value):
    """The tangent of a result that depends on nothing varied: zeros of an
    array's shape, else ``NO_TANGENT``."""
    return np.zeros(value.shape) if isinstance(value, np.ndarray) else NO_TANGENT


# The rules of the rest of Python's numbers and of numpy (they import this
# module, whose names they use, as ``ad``).
import ad_math  # noqa: E402,F401
import ad_numpy  # noqa: E402,F401

if __name__ == "__main__":
    print("D(sin, 1)                      =", derivative(math.sin, 1.0), "  cos(1) =", math.cos(1.0))
    print("D(x -> D(sin, x), 1)           =", derivative(lambda x: derivative(math.sin, x), 1.0),
          "  -sin(1) =", -math.sin(1.0))
    print("D(x -> x*D(y -> x*y, 1), 2)    =",
          derivative(lambda x: x * derivative(lambda y: x * y, 1), 2))
