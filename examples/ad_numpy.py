"""The AD example's rules for numpy: a tagged array's tangent is an array of
its shape, and every rule here gives its result the tangent the chain rule
says — or raises :class:`ad.NotDifferentiable` (a
:class:`cassette.MetadataLossError`) for what it cannot differentiate.

* **Elementwise ufuncs** (``UNARY``, ``BINARY``): each has its partial
  derivatives; ``out=`` writes the tangent into the output's tangent (an
  array that carries none cannot take one: an error), ``where=`` keeps
  the output's tangent where the ufunc keeps its value.  Comparisons,
  tests and steps (``floor``, ``sign`` …) give results without tangents.
* **Linear functions** of one array (copies, conversions, reshapes,
  ``sum``/``mean``/``cumsum``/``diff`` with any ``axis``/``keepdims``, …):
  the tangent goes through the same function.  **Of several**
  (``concatenate``, ``stack`` …): the tangents of the arrays given, zero
  for those without one.
* **The others**: ``prod``, ``max``/``min`` (piecewise), ``var``/``std``,
  ``ufunc.reduce`` of ``add``, ``multiply``, ``maximum``, ``minimum`` (as
  numpy's own ``ptp``, ``nansum``, ``average`` … call it),
  ``clip``, ``where``, products (``dot``, ``outer``, ``einsum`` …),
  ``np.linalg.norm``/``det``/``inv``/``solve``.
* **Data**: ``a[key]`` and ``a[key] = v`` of a tagged array, iteration,
  ``tolist``, ``list(a)`` (``sum(a)`` is ``ad.py``'s rule); arrays made
  ``*_like`` a tagged one are tagged (with a zero tangent), so that a program can fill them.  A
  store of a value with a tangent into an array without one raises: start
  from an array made like the input (``np.zeros_like(x)``) or a copy.

Tangents are never shared between arrays that are not views of each other:
a store into one array's tangent changes no other's.  Imported by
``ad.py``; see its docstring.
"""

import operator
import types

import numpy as np

import cassette
from cassette import istagged, metadata, tag, untag

from ad import NO_TANGENT, ForwardAD, NotDifferentiable, _elements, _name, _pair

__all__ = ["BINARY", "TAGGED_ARRAY", "UNARY", "linear"]

#: Only tagged arrays are dispatched to the handlers that name it: the
#: program's other subscripts and attribute loads never call one.
TAGGED_ARRAY = cassette.Tagged[np.ndarray]

_register = cassette.execute.register


def tangent_of(value, ctx):
    """The tangent ``value`` carries, or None when it carries none (which
    lets a rule skip the term)."""
    t = metadata(value, ctx)
    return None if t is cassette.NoMetaData or t is NO_TANGENT else t


def _zeros(primal):
    primal = np.asarray(primal)
    return np.zeros(primal.shape, dtype=np.result_type(primal.dtype, np.float64))


def _or_zeros(t, primal):
    return _zeros(primal) if t is None else t


_ndarray = np.ndarray


def carrying(ctx, value, t):
    """``value`` with tangent ``t``: untagged when ``t`` is None or
    ``value`` holds no floats (integers, booleans: nothing to carry)."""
    if t is None:
        return value
    if (type(value) is _ndarray and type(t) is _ndarray and t.shape == value.shape
            and value.dtype.kind in "fc" and t.flags.writeable):
        return tag(value, ctx, t)       # the common case, first
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "fc":
            return value
        t = np.asarray(t)
        if t.shape != value.shape:
            t = np.broadcast_to(t, value.shape)
        if not t.flags.writeable:      # a broadcast view: a tangent of its own
            t = np.array(t)
        return tag(value, ctx, t)
    if isinstance(value, (np.integer, np.bool_, bool, int)) and not isinstance(value, float):
        return value
    return tag(value, ctx, t[()] if isinstance(t, np.ndarray) and t.ndim == 0 else t)


def _primals(args, ctx):
    return [untag(a, ctx) for a in args]


def _plain_keywords(keywords, ctx, callee):
    """``keywords`` untagged; none of them may carry a tangent (``callee``
    is named if one does)."""
    if not keywords:
        return keywords
    for key, value in keywords.items():
        if tangent_of(value, ctx) is not None:
            raise NotDifferentiable(f"{_name(callee)}: the keyword argument {key}= carries "
                                    f"a tangent")
    return {k: untag(v, ctx) for k, v in keywords.items()}


# -- elementwise ufuncs -------------------------------------------------------------

_LN2, _LN10 = np.log(2.0), np.log(10.0)

#: ufunc -> ``d(x, r)``: the derivative at ``x``, given the result ``r``.
UNARY = {
    np.negative: lambda x, r: -1.0,
    np.positive: lambda x, r: 1.0,
    np.absolute: lambda x, r: np.conj(x) / r,     # complex x too (the real part is taken)
    np.fabs: lambda x, r: np.sign(x),
    np.square: lambda x, r: 2 * x,
    np.sqrt: lambda x, r: 0.5 / r,
    np.cbrt: lambda x, r: 1 / (3 * r * r),
    np.reciprocal: lambda x, r: -r * r,
    np.exp: lambda x, r: r,
    np.exp2: lambda x, r: r * _LN2,
    np.expm1: lambda x, r: r + 1,
    np.log: lambda x, r: 1 / x,
    np.log2: lambda x, r: 1 / (x * _LN2),
    np.log10: lambda x, r: 1 / (x * _LN10),
    np.log1p: lambda x, r: 1 / (1 + x),
    np.sin: lambda x, r: np.cos(x),
    np.cos: lambda x, r: -np.sin(x),
    np.tan: lambda x, r: 1 + r * r,
    np.arcsin: lambda x, r: 1 / np.sqrt(1 - x * x),
    np.arccos: lambda x, r: -1 / np.sqrt(1 - x * x),
    np.arctan: lambda x, r: 1 / (1 + x * x),
    np.sinh: lambda x, r: np.cosh(x),
    np.cosh: lambda x, r: np.sinh(x),
    np.tanh: lambda x, r: 1 - r * r,
    np.arcsinh: lambda x, r: 1 / np.sqrt(x * x + 1),
    np.arccosh: lambda x, r: 1 / np.sqrt(x * x - 1),
    np.arctanh: lambda x, r: 1 / (1 - x * x),
    np.deg2rad: lambda x, r: np.pi / 180,
    np.radians: lambda x, r: np.pi / 180,
    np.rad2deg: lambda x, r: 180 / np.pi,
    np.degrees: lambda x, r: 180 / np.pi,
    np.conjugate: None,             # linear: the tangent's conjugate
}

#: ufunc -> ``(d/dx, d/dy)``, each ``d(x, y, r)``.
BINARY = {
    np.add: (lambda x, y, r: 1.0, lambda x, y, r: 1.0),
    np.subtract: (lambda x, y, r: 1.0, lambda x, y, r: -1.0),
    np.multiply: (lambda x, y, r: y, lambda x, y, r: x),
    np.divide: (lambda x, y, r: 1 / y, lambda x, y, r: -r / y),
    np.power: (lambda x, y, r: y * x ** (y - 1), lambda x, y, r: r * np.log(x)),
    np.float_power: (lambda x, y, r: y * np.float_power(x, y - 1), lambda x, y, r: r * np.log(x)),
    np.maximum: (lambda x, y, r: x >= y, lambda x, y, r: x < y),
    np.fmax: (lambda x, y, r: x >= y, lambda x, y, r: x < y),
    np.minimum: (lambda x, y, r: x <= y, lambda x, y, r: x > y),
    np.fmin: (lambda x, y, r: x <= y, lambda x, y, r: x > y),
    np.arctan2: (lambda x, y, r: y / (x * x + y * y), lambda x, y, r: -x / (x * x + y * y)),
    np.hypot: (lambda x, y, r: x / r, lambda x, y, r: y / r),
    np.logaddexp: (lambda x, y, r: np.exp(x - r), lambda x, y, r: np.exp(y - r)),
    np.logaddexp2: (lambda x, y, r: np.exp2(x - r), lambda x, y, r: np.exp2(y - r)),
    np.copysign: (lambda x, y, r: np.sign(x) * np.sign(r), None),
    np.remainder: (lambda x, y, r: 1.0, lambda x, y, r: -np.floor(x / y)),
    np.fmod: (lambda x, y, r: 1.0, lambda x, y, r: -np.trunc(x / y)),
    np.ldexp: (lambda x, y, r: np.exp2(y), None),
    np.nextafter: (lambda x, y, r: 1.0, None),
}

#: ufuncs whose results carry no tangent: steps, comparisons, tests.
STEPS = (np.floor, np.ceil, np.trunc, np.rint, np.sign, np.floor_divide, np.heaviside,
         np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
         np.isnan, np.isinf, np.isfinite, np.signbit, np.logical_and, np.logical_or,
         np.logical_xor, np.logical_not, np.spacing, np.isnat, np.gcd, np.lcm, np.invert,
         np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.left_shift, np.right_shift,
         *[getattr(np, name) for name in ("bitwise_count",) if hasattr(np, name)])


def _is_complex(x):
    if type(x) is _ndarray:
        return x.dtype.kind == "c"
    return isinstance(x, (complex, np.complexfloating))


def _elementwise(partials):
    """The handler of a ufunc whose partial derivatives are ``partials``
    (None: that argument's is zero)."""

    def propagate(ctx, f, *args, out=None, where=True, **keywords):
        if len(args) > f.nin:           # outputs given positionally
            args, out = args[:f.nin], args[f.nin:]
        primals = [untag(a, ctx) for a in args]
        target = out[0] if isinstance(out, tuple) else out
        if target is None and where is True and not keywords:
            value = f(*primals)
        else:
            plain = _plain_keywords(keywords, ctx, f)
            where = untag(where, ctx)
            if target is not None:
                plain["out"] = destination = untag(target, ctx)
                # An input the output overwrites (np.multiply(a, a, out=a)):
                # the partial derivatives read it as it was.
                partial_primals = [p.copy() if type(p) is _ndarray and np.shares_memory(
                    p, destination) else p for p in primals]
            if where is not True:
                plain["where"] = where
            value = f(*primals, **plain)
            if target is not None:
                primals = partial_primals
        t = None
        for index, arg in enumerate(args):
            dx = tangent_of(arg, ctx)
            if dx is None:
                continue
            if partials is None:
                term = np.conjugate(dx)
            elif partials[index] is None:
                continue
            else:
                term = partials[index](*primals, value) * dx
            t = term if t is None else t + term
        if t is not None and _is_complex(t) and not _is_complex(value):
            t = np.real(t)              # a real function of a complex argument
        return _written(ctx, f, value, t, target, where)

    return propagate


def _written(ctx, callee, value, t, target, where):
    """The result of a ufunc: ``value`` with tangent ``t``, or — with
    ``out=target`` — ``target`` with ``t`` written into its tangent where
    ``where`` holds."""
    if target is None:
        if t is not None and where is not True:
            t = np.where(where, t, 0.0)
        return carrying(ctx, value, t)
    current = tangent_of(target, ctx)
    if isinstance(current, np.ndarray) and current.shape == np.shape(value):
        np.copyto(current, 0.0 if t is None else t, where=where)
        return target
    if t is None and not istagged(target, ctx):
        return value
    raise NotDifferentiable(f"{_name(callee)}(..., out=...): the output array carries no tangent to "
                            f"write into (make it from a tagged array, e.g. np.zeros_like(x))")


for _callee, _d in UNARY.items():
    _register(ForwardAD, _callee)(_elementwise(None if _d is None else (_d,)))
for _callee, _ds in BINARY.items():
    _register(ForwardAD, _callee)(_elementwise(_ds))
for _callee in STEPS:
    _register(ForwardAD, _callee)(_elementwise((None, None)))


# -- functions whose results carry no tangent: indices, counts, rounding ---------------

def _no_tangent(ctx, f, *args, **keywords):
    """Indices, counts and rounded values: derivative zero (wherever there is
    one), the result untagged."""
    return f(*_primals(args, ctx), **_plain_keywords(keywords, ctx, f))


for _callee in (np.argsort, np.ndarray.argsort, np.argmax, np.ndarray.argmax, np.argmin,
                np.ndarray.argmin, np.argwhere, np.nonzero, np.ndarray.nonzero, np.flatnonzero,
                np.searchsorted, np.ndarray.searchsorted, np.count_nonzero, np.shape, np.ndim,
                np.size, np.round, np.around, np.ndarray.round, np.isclose, np.allclose,
                np.array_equal, np.any, np.all, np.ndarray.any, np.ndarray.all):
    _register(ForwardAD, _callee)(_no_tangent)


# -- linear functions of one array ----------------------------------------------------

def linear(callee, apply=None):
    """Register ``callee``, linear in its first argument: the tangent is
    ``apply(tangent, *rest, **keywords)`` (``callee`` itself by default)."""
    apply = callee if apply is None else apply

    @_register(ForwardAD, callee)
    def propagate(ctx, f, first, *rest, **keywords):
        if any(tangent_of(r, ctx) is not None for r in rest):
            raise NotDifferentiable(f"{_name(f)}: only its first argument may carry a tangent")
        rest = _primals(rest, ctx)
        keywords = _plain_keywords(keywords, ctx, f)
        value = f(untag(first, ctx), *rest, **keywords)
        t = tangent_of(first, ctx)
        if t is None and isinstance(first, (list, tuple)):
            t = _nested_tangent(first, None, ctx)     # np.sum([x, y]) …
            t = None if t is None else np.array(t, dtype=float)
        if t is None:
            return value
        if not isinstance(t, np.ndarray):
            t = np.asarray(t, dtype=float)
        return carrying(ctx, value, apply(t, *rest, **keywords))

    return propagate


def _as_float_type(t, dtype=None, *rest, **keywords):
    """``astype``'s tangent: the tangent in the new precision (zero for
    integer types, which :func:`carrying` leaves untagged)."""
    dtype = np.dtype(dtype)
    return t.astype(dtype if dtype.kind in "fc" else float)


_LINEAR = (np.copy, np.ndarray.copy, np.ravel, np.ndarray.ravel, np.ndarray.flatten, np.reshape,
           np.ndarray.reshape, np.transpose, np.swapaxes, np.ndarray.swapaxes, np.moveaxis,
           np.squeeze, np.ndarray.squeeze, np.expand_dims, np.flip, np.fliplr, np.flipud,
           np.roll, np.rot90, np.tile, np.repeat, np.ndarray.repeat, np.broadcast_to,
           np.atleast_1d, np.atleast_2d, np.diag, np.diagonal, np.ndarray.diagonal,
           np.trace, np.ndarray.trace, np.triu, np.tril, np.sum, np.ndarray.sum, np.mean,
           np.ndarray.mean, np.cumsum, np.ndarray.cumsum, np.diff, np.take, np.ndarray.take,
           np.real, np.imag, np.float64, np.float32, np.pad)
for _callee in _LINEAR:
    linear(_callee)
linear(np.ndarray.transpose, np.transpose)
linear(np.ndarray.astype, _as_float_type)
linear(np.ndarray.conjugate, np.conjugate)
linear(np.ndarray.conj, np.conjugate)


def _nested_tangent(value, meta, ctx):
    """The tangent of ``value`` — a number, an array or nested lists and
    tuples of them — given its metadata as a component (``meta``, a
    ``cassette.Meta`` or None), or None when nothing in it has one."""
    if meta is not None and meta.data is not cassette.NoMetaData and meta.data is not NO_TANGENT:
        return meta.data
    t = tangent_of(value, ctx)
    if t is not None:
        return t
    if isinstance(value, (list, tuple)):
        parts = cassette.metameta(value, ctx) if meta is None else meta.meta
        if not isinstance(parts, list) or len(parts) != len(value):
            parts = [None] * len(value)
        tangents = [_nested_tangent(v, m, ctx) for v, m in zip(value, parts)]
        if all(t is None for t in tangents):
            return None
        return [_or_zeros(t, untag(v, ctx)) if not isinstance(v, (list, tuple)) else
                (t if t is not None else _zeros(np.array(v, dtype=float))) for v, t in
                zip(value, tangents)]
    return None


def _made_array(ctx, f, data, *rest, **keywords):
    """``np.array(data)`` … of an array or of nested lists of numbers and
    arrays: the tangent is made from theirs the same way."""
    rest = _primals(rest, ctx)
    keywords = _plain_keywords(keywords, ctx, f)
    primal = untag(data, ctx)
    value = f(primal, *rest, **keywords)
    if value is primal and istagged(data, ctx):
        return data                 # np.asarray(a) is a: so is its tangent
    t = _nested_tangent(data, None, ctx)
    if t is None:
        return value
    t = np.array(t, dtype=np.result_type(value, 1.0) if isinstance(value, np.ndarray) else float)
    return carrying(ctx, value, t)


for _callee in (np.array, np.asarray, np.asanyarray, np.ascontiguousarray):
    _register(ForwardAD, _callee)(_made_array)


def _zero_like(ctx, f, prototype, *rest, **keywords):
    """``np.zeros_like(x)`` … of a tagged ``x``: a tagged array with a zero
    tangent, which a program may fill with values that carry tangents."""
    value = f(untag(prototype, ctx), *_primals(rest, ctx),
              **_plain_keywords(keywords, ctx, f))
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        return tag(value, ctx, _zeros(value))
    return value


for _callee in (np.zeros_like, np.ones_like, np.empty_like, np.full_like):
    _register(ForwardAD, _callee, TAGGED_ARRAY, cassette.Vararg(object))(_zero_like)


# -- linear functions of several arrays ---------------------------------------------------

def _sequence(arrays, ctx):
    """``(primals, tangents)`` of the arrays in ``arrays`` (``ad._elements``:
    a list or tuple built in the run keeps its elements' tangents as their
    metadata), None for each without a tangent."""
    primals, tangents = _elements(arrays, ctx)
    return primals, [None if t is NO_TANGENT else t for t in tangents]


def _joining(ctx, f, arrays, *rest, **keywords):
    rest = _primals(rest, ctx)
    keywords = _plain_keywords(keywords, ctx, f)
    if istagged(arrays, ctx):           # one array: each of these is linear in it
        primal, t = untag(arrays, ctx), tangent_of(arrays, ctx)
        value = f(primal, *rest, **keywords)
        return value if t is None else carrying(ctx, value, f(t, *rest, **keywords))
    primals, tangents = _sequence(arrays, ctx)
    value = f(primals, *rest, **keywords)
    if all(t is None for t in tangents):
        return value
    return carrying(ctx, value, f([_or_zeros(t, p) for p, t in zip(primals, tangents)],
                                  *rest, **keywords))


for _callee in (np.concatenate, np.stack, np.hstack, np.vstack, np.dstack, np.column_stack,
                np.block):
    _register(ForwardAD, _callee)(_joining)


@_register(ForwardAD, np.append)
def _append(ctx, f, array, values, axis=None):
    ta, tv = tangent_of(array, ctx), tangent_of(values, ctx)
    a, v = untag(array, ctx), untag(values, ctx)
    value = f(a, v, axis=axis)
    if ta is None and tv is None:
        return value
    return carrying(ctx, value, f(_or_zeros(ta, a), _or_zeros(tv, v), axis=axis))


# -- products --------------------------------------------------------------------------

def _bilinear(callee):
    """``callee(a, b, ...)`` is linear in each of ``a``, ``b``: the tangent
    is ``callee(da, b) + callee(a, db)``."""

    @_register(ForwardAD, callee)
    def propagate(ctx, f, a, b, *rest, **keywords):
        rest = _primals(rest, ctx)
        keywords = _plain_keywords(keywords, ctx, f)
        x, y = untag(a, ctx), untag(b, ctx)
        value = f(x, y, *rest, **keywords)
        da, db = tangent_of(a, ctx), tangent_of(b, ctx)
        t = None if da is None else f(da, y, *rest, **keywords)
        if db is not None:
            t = f(x, db, *rest, **keywords) if t is None else t + f(x, db, *rest, **keywords)
        return carrying(ctx, value, t)

    return propagate


for _callee in (np.dot, np.ndarray.dot, np.matmul, operator.matmul, operator.imatmul, np.outer,
                np.inner, np.vdot, np.kron, np.cross, np.tensordot, np.convolve, np.correlate,
                *[getattr(np, name) for name in ("vecdot", "matvec", "vecmat")
                  if hasattr(np, name)]):
    _bilinear(_callee)


def _two_outputs(jvp):
    """The handler of a ufunc of two outputs (``modf``, ``divmod``,
    ``frexp``): ``jvp(primals, tangents, outputs)`` gives the outputs'
    tangents (None: none)."""

    def propagate(ctx, f, *args, **keywords):
        if keywords:
            raise NotDifferentiable(f"{_name(f)}: no rule for {sorted(keywords)}")
        primals = [untag(a, ctx) for a in args]
        outputs = f(*primals)
        tangents = [tangent_of(a, ctx) for a in args]
        if all(t is None for t in tangents):
            return outputs
        first, second = jvp(primals, tangents, outputs)
        return cassette.overdub(ctx, _pair, carrying(ctx, outputs[0], first),
                                carrying(ctx, outputs[1], second))

    return propagate


def _divmod_jvp(p, t, outputs):
    x, y = p
    dx = 0.0 if t[0] is None else t[0]
    dy = 0.0 if t[1] is None else t[1]
    return None, dx - np.floor(x / y) * dy


for _callee, _jvp in [
        (np.modf, lambda p, t, o: (t[0], None)),
        (np.frexp, lambda p, t, o: (t[0] / np.exp2(o[1]), None)),
        (np.divmod, _divmod_jvp)]:
    _register(ForwardAD, _callee)(_two_outputs(_jvp))


@_register(ForwardAD, np.einsum)
def _einsum(ctx, f, subscripts, *operands, **keywords):
    """Multilinear: one term per operand with a tangent."""
    keywords = _plain_keywords(keywords, ctx, f)
    primals = _primals(operands, ctx)
    value = f(subscripts, *primals, **keywords)
    t = None
    for index, operand in enumerate(operands):
        d = tangent_of(operand, ctx)
        if d is not None:
            term = f(subscripts, *primals[:index], d, *primals[index + 1:], **keywords)
            t = term if t is None else t + term
    return carrying(ctx, value, t)


# -- reductions that are not linear -------------------------------------------------------

def _axis_last(x, axis):
    """``x`` with the axes of ``axis`` (None: all) moved last and merged
    into one, and how to put a reduced result back: ``(x2, restore)``."""
    x = np.asarray(x)
    if axis is None:
        axes = tuple(range(x.ndim))
    else:
        axes = tuple(a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, kept + list(axes))
    kept_shape = [x.shape[a] for a in kept]
    merged = moved.reshape(kept_shape + [-1])

    def restore(reduced, keepdims):
        reduced = np.asarray(reduced).reshape(kept_shape)
        if keepdims:
            reduced = np.expand_dims(reduced, axes)
        return reduced

    return merged, restore


def _reduction(jvp):
    """A handler for ``f(x, axis=None, …, keepdims=False)`` whose tangent
    is ``jvp(x, dx, value_kept)`` over the last axis of the merged form."""

    def propagate(ctx, f, array, axis=None, *rest, **keywords):
        if rest:
            raise NotDifferentiable(f"{_name(f)}: pass its options as keywords")
        keywords = _plain_keywords(keywords, ctx, f)
        axis = untag(axis, ctx)
        x = untag(array, ctx)
        value = f(x, axis=axis, **keywords)
        dx = tangent_of(array, ctx)
        if dx is None:
            return value
        unknown = set(keywords) - {"keepdims", "ddof", "dtype"}
        if unknown or keywords.get("dtype") not in (None, float, np.float64):
            raise NotDifferentiable(f"{_name(f)}: no rule for the options {sorted(keywords)}")
        merged, restore = _axis_last(x, axis)
        tmerged, _ = _axis_last(np.broadcast_to(dx, np.shape(x)), axis)
        t = jvp(merged, tmerged, keywords)
        return carrying(ctx, value, restore(t, keywords.get("keepdims", False)))

    return propagate


def _prod_jvp(x, dx, keywords):
    """Σ_j dx_j · Π_{k≠j} x_k, from exclusive running products both ways
    (exact at zeros, where dividing by x_j is not)."""
    ones = np.ones(x.shape[:-1] + (1,), dtype=np.result_type(x, 1.0))
    before = np.cumprod(np.concatenate([ones, x[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, x[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return np.sum(dx * before * after, axis=-1)


def _chosen_jvp(choose):
    def jvp(x, dx, keywords):
        index = choose(x, axis=-1)[..., None]
        return np.take_along_axis(dx, index, axis=-1)[..., 0]
    return jvp


def _var_jvp(x, dx, keywords):
    n = x.shape[-1] - keywords.get("ddof", 0)
    centred = x - x.mean(axis=-1, keepdims=True)
    return 2 * np.sum(centred * (dx - dx.mean(axis=-1, keepdims=True)), axis=-1) / n


def _std_jvp(x, dx, keywords):
    std = np.sqrt(np.sum((x - x.mean(axis=-1, keepdims=True)) ** 2, axis=-1)
                  / (x.shape[-1] - keywords.get("ddof", 0)))
    return _var_jvp(x, dx, keywords) / (2 * std)


for _callees, _jvp in [
        ((np.prod, np.ndarray.prod), _prod_jvp),
        ((np.max, np.ndarray.max, np.amax), _chosen_jvp(np.argmax)),
        ((np.min, np.ndarray.min, np.amin), _chosen_jvp(np.argmin)),
        ((np.nanmax,), _chosen_jvp(np.nanargmax)),
        ((np.nanmin,), _chosen_jvp(np.nanargmin)),
        ((np.var, np.ndarray.var), _var_jvp),
        ((np.std, np.ndarray.std), _std_jvp)]:
    for _callee in _callees:
        _register(ForwardAD, _callee)(_reduction(_jvp))


#: ``ufunc.reduce``'s options, in the order of its positional parameters.
_REDUCE_OPTIONS = ("axis", "dtype", "out", "keepdims", "initial", "where")
_NO_VALUE = getattr(np, "_NoValue", object())
#: ufunc -> the tangent of its reduction over the last axis (numpy's own
#: functions — ``np.ptp``, ``np.nansum``, ``np.average`` … — reduce so).
_REDUCED = {np.add: lambda x, dx, keywords: np.sum(dx, axis=-1),
            np.multiply: _prod_jvp,
            np.maximum: _chosen_jvp(np.argmax), np.fmax: _chosen_jvp(np.nanargmax),
            np.minimum: _chosen_jvp(np.argmin), np.fmin: _chosen_jvp(np.nanargmin)}


def _ufunc_method(ctx, f, ufunc, array, rest, keywords, parameters):
    """``f(ufunc, array, *rest, **keywords)`` — a ufunc's ``reduce`` or
    ``accumulate`` — on primal values: ``(value, x, dx, options)``, the
    options by the names of ``parameters``."""
    x, dx = untag(array, ctx), tangent_of(array, ctx)
    rest = _primals(rest, ctx)
    keywords = _plain_keywords(keywords, ctx, f)
    value = f(ufunc, x, *rest, **keywords)
    return value, x, dx, {**dict(zip(parameters, rest)), **keywords}


@_register(ForwardAD, np.ufunc.accumulate)
def _ufunc_accumulate(ctx, f, ufunc, array, *rest, **keywords):
    """``np.add.accumulate``: a running sum, so its tangent is the running
    sum of the tangent (other ufuncs: no rule)."""
    value, x, dx, options = _ufunc_method(ctx, f, ufunc, array, rest, keywords,
                                          ("axis", "dtype", "out"))
    if dx is None:
        return value
    if ufunc is not np.add or options.get("out") is not None:
        raise NotDifferentiable(f"{ufunc.__name__}.accumulate: no rule")
    return carrying(ctx, value, np.cumsum(np.broadcast_to(dx, np.shape(x)),
                                          axis=options.get("axis", 0)))


@_register(ForwardAD, np.ufunc.reduce)
def _ufunc_reduce(ctx, f, ufunc, array, *rest, **keywords):
    """``np.add.reduce(x, axis, …)`` … of the ufuncs of ``_REDUCED``."""
    value, x, dx, options = _ufunc_method(ctx, f, ufunc, array, rest, keywords,
                                          _REDUCE_OPTIONS)
    if dx is None:
        return value
    jvp = _REDUCED.get(ufunc)
    initial = options.get("initial", _NO_VALUE)
    if (jvp is None or options.get("out") is not None
            or options.get("where", True) is not True
            or initial is not _NO_VALUE and ufunc is not np.add):
        raise NotDifferentiable(f"{ufunc.__name__}.reduce: no rule for these options "
                                f"{sorted(k for k in options if options[k] is not None)}")
    axis = options.get("axis", 0)
    merged, restore = _axis_last(x, axis)
    tmerged, _ = _axis_last(np.broadcast_to(dx, np.shape(x)), axis)
    return carrying(ctx, value, restore(jvp(merged, tmerged, {}),
                                        options.get("keepdims", False)))


@_register(ForwardAD, np.cumprod)
@_register(ForwardAD, np.ndarray.cumprod)
def _cumprod(ctx, f, array, axis=None, **keywords):
    keywords = _plain_keywords(keywords, ctx, f)
    x = untag(array, ctx)
    value = f(x, axis=axis, **keywords)
    dx = tangent_of(array, ctx)
    if dx is None:
        return value
    if axis is None:
        x, dx, axis = np.ravel(x), np.ravel(dx), 0
    # d(Π_{k≤i} x_k) = Σ_{j≤i} dx_j Π_{k≤i, k≠j} x_k, term by term along the axis.
    x, dx = np.moveaxis(x, axis, -1), np.moveaxis(np.broadcast_to(dx, np.shape(x)), axis, -1)
    running = np.zeros(x.shape, dtype=np.result_type(x, 1.0))
    product = np.ones(x.shape[:-1], dtype=running.dtype)
    t = np.zeros(x.shape[:-1], dtype=running.dtype)
    for i in range(x.shape[-1]):
        t = t * x[..., i] + product * dx[..., i]
        product = product * x[..., i]
        running[..., i] = t
    return carrying(ctx, value, np.moveaxis(running, -1, axis))


# -- piecewise functions -------------------------------------------------------------------

@_register(ForwardAD, np.where)
def _where(ctx, f, condition, *branches):
    condition = untag(condition, ctx)
    if not branches:
        return f(condition)
    a, b = branches
    ta, tb = tangent_of(a, ctx), tangent_of(b, ctx)
    x, y = untag(a, ctx), untag(b, ctx)
    value = f(condition, x, y)
    if ta is None and tb is None:
        return value
    return carrying(ctx, value, np.where(condition, 0.0 if ta is None else ta,
                                         0.0 if tb is None else tb))


@_register(ForwardAD, np.clip)
@_register(ForwardAD, np.ndarray.clip)
def _clip(ctx, f, array, low=None, high=None, **keywords):
    keywords = _plain_keywords(keywords, ctx, f)
    if keywords.get("out") is not None:
        raise NotDifferentiable(f"{_name(f)}: no rule for out=")
    keywords.pop("out", None)
    x, lo, hi = untag(array, ctx), untag(low, ctx), untag(high, ctx)
    value = f(x, lo, hi, **keywords)
    tx, tlo, thi = tangent_of(array, ctx), tangent_of(low, ctx), tangent_of(high, ctx)
    if tx is None and tlo is None and thi is None:
        return value
    below = (x < lo) if lo is not None else False
    above = (x > hi) if hi is not None else False
    inside = ~(np.asarray(below) | np.asarray(above))
    t = np.where(inside, 0.0 if tx is None else tx, 0.0)
    if tlo is not None:
        t = t + np.where(below, tlo, 0.0)
    if thi is not None:
        t = t + np.where(above, thi, 0.0)
    return carrying(ctx, value, t)


# -- np.linalg ----------------------------------------------------------------------------

@_register(ForwardAD, np.linalg.norm)
def _norm(ctx, f, array, ord=None, axis=None, keepdims=False):
    x = untag(array, ctx)
    value = f(x, ord, axis, keepdims)
    dx = tangent_of(array, ctx)
    if dx is None:
        return value
    ord, axis = untag(ord, ctx), untag(axis, ctx)
    vector = (axis is None and x.ndim == 1) or isinstance(axis, int)
    kept = value if keepdims else (np.expand_dims(value, axis) if axis is not None else value)
    if ord is None or ord == "fro" or (vector and ord == 2):
        t = np.sum(x * dx, axis=axis, keepdims=keepdims) / value
    elif vector and ord == 1:
        t = np.sum(np.sign(x) * dx, axis=axis, keepdims=keepdims)
    elif vector and ord == np.inf:
        index = np.expand_dims(np.argmax(np.abs(x), axis=-1 if axis is None else axis),
                               -1 if axis is None else axis)
        ax = -1 if axis is None else axis
        t = np.take_along_axis(np.sign(x) * dx, index, axis=ax)
        t = t if keepdims else np.squeeze(t, axis=ax)
    elif not vector and axis is None and x.ndim == 2 and ord in (2, "nuc"):
        # Singular values: dσ_i = u_iᵀ dA v_i (the largest for 2, all for nuc).
        u, _, vt = np.linalg.svd(x, full_matrices=False)
        terms = np.einsum("ji,jk,ik->i", u, dx, vt)
        t = terms[0] if ord == 2 else np.sum(terms)
        t = np.reshape(t, np.shape(value))
    elif vector and isinstance(ord, (int, float)) and ord >= 1:
        t = (np.sum(np.abs(x) ** (ord - 1) * np.sign(x) * dx, axis=axis, keepdims=True)
             / np.asarray(kept) ** (ord - 1))
        t = t if keepdims else np.squeeze(t, axis=-1 if axis is None else axis)
    else:
        raise NotDifferentiable(f"numpy.linalg.norm: no rule for ord={ord!r}, axis={axis!r}")
    return carrying(ctx, value, t)


def _of_a_matrix(callee, jvp):
    """Register ``callee(A)``: its tangent is ``jvp(A, callee(A), dA)``."""

    @_register(ForwardAD, callee)
    def propagate(ctx, f, array):
        a = untag(array, ctx)
        value = f(a)
        da = tangent_of(array, ctx)
        return value if da is None else carrying(ctx, value, jvp(a, value, da))


# d det A = det A · tr(A⁻¹ dA);  d A⁻¹ = −A⁻¹ dA A⁻¹
_of_a_matrix(np.linalg.det, lambda a, det, da: det * np.trace(np.linalg.solve(a, da),
                                                                axis1=-2, axis2=-1))
_of_a_matrix(np.linalg.inv, lambda a, inverse, da: -inverse @ da @ inverse)


def _rebuilt(kind, *items):
    # Run under the context: a named tuple made here keeps each item's tangent.
    return kind(*items)


@_register(ForwardAD, np.linalg.slogdet)
def _slogdet(ctx, f, array):
    """``(sign, log|det A|)``: the sign is constant, ``d log|det A| =
    tr(A⁻¹ dA)``; the result is numpy's own named tuple."""
    a, da = untag(array, ctx), tangent_of(array, ctx)
    value = f(a)
    if da is None:
        return value
    t = np.trace(np.linalg.solve(a, da), axis1=-2, axis2=-1)
    return cassette.overdub(ctx, _rebuilt, type(value), value[0],
                            carrying(ctx, value[1], np.asarray(t)))


@_register(ForwardAD, np.linalg.cholesky)
def _cholesky(ctx, f, array, *rest, **keywords):
    """``A = L Lᵀ``: ``dL = L Φ(L⁻¹ dA L⁻ᵀ)``, Φ the lower triangle with its
    diagonal halved."""
    if rest or keywords:
        raise NotDifferentiable("numpy.linalg.cholesky: no rule for its options")
    a, da = untag(array, ctx), tangent_of(array, ctx)
    value = f(a)
    if da is None:
        return value
    # The matrix cholesky reads is the symmetric one of A's lower triangle.
    lower = np.tril(da)
    da = lower + np.swapaxes(lower, -1, -2) - lower * np.eye(a.shape[-1])
    inverse = np.linalg.inv(value)
    inner = inverse @ da @ np.swapaxes(inverse, -1, -2)
    phi = np.tril(inner) - 0.5 * np.eye(a.shape[-1]) * inner
    return carrying(ctx, value, value @ phi)


if hasattr(np.linalg, "svdvals"):                       # numpy 2.0+
    @_register(ForwardAD, np.linalg.svdvals)
    def _svdvals(ctx, f, array):
        """dσ_i = u_iᵀ dA v_i."""
        a, da = untag(array, ctx), tangent_of(array, ctx)
        value = f(a)
        if da is None:
            return value
        u, _, vt = np.linalg.svd(a, full_matrices=False)
        return carrying(ctx, value, np.einsum("...ji,...jk,...ik->...i", u, da, vt))


@_register(ForwardAD, np.linalg.solve)
def _solve(ctx, f, matrix, rhs):
    a, b = untag(matrix, ctx), untag(rhs, ctx)
    value = f(a, b)
    da, db = tangent_of(matrix, ctx), tangent_of(rhs, ctx)
    if da is None and db is None:
        return value
    # A x = b: A dx = db − dA x
    residual = _or_zeros(db, b) if da is None else _or_zeros(db, b) - (
        da @ value if np.ndim(value) == np.ndim(a) else (da @ value[..., None])[..., 0])
    return carrying(ctx, value, f(a, residual))


# -- numpy's own argument handling ------------------------------------------------------

_ArrayConverter = getattr(getattr(np, "_core", None), "_multiarray_umath", None)
_ArrayConverter = getattr(_ArrayConverter, "_array_converter", None)


class _TangentConverter:
    """What ``_array_converter(*arrays)`` gives under the context: numpy's
    converter (numpy 2 converts the arguments of ``linspace``, ``logspace``
    … with it) whose ``as_arrays`` gives back each argument's tangent.
    Run overdubbed, as the numpy code calling it is."""

    def __init__(self, ctx, converter, tangents):
        self._ctx, self._converter, self._tangents = ctx, converter, tangents

    def _carrying(self, array, t):
        if t is None:
            return array
        return carrying(self._ctx, array, np.array(np.broadcast_to(t, np.shape(array)),
                                                   dtype=np.result_type(array, 1.0)))

    def as_arrays(self, *args, **keywords):
        arrays = self._converter.as_arrays(*args, **keywords)
        return tuple(self._carrying(a, t) for a, t in zip(arrays, self._tangents))

    def __getitem__(self, index):
        return self._carrying(self._converter[index], self._tangents[index])

    def __len__(self):
        return len(self._converter)

    def wrap(self, array, *args, **keywords):
        """numpy's ``wrap`` (a 0-d result may become a scalar), the
        tangent going along."""
        t = tangent_of(array, self._ctx)
        value = self._converter.wrap(untag(array, self._ctx), *args, **keywords)
        return value if t is None else carrying(self._ctx, value, np.asarray(t))

    def __getattr__(self, name):
        return getattr(self._converter, name)      # result_type, scalar_input


if _ArrayConverter is not None:
    @_register(ForwardAD, _ArrayConverter)
    def _converted(ctx, f, *arrays):
        tangents = [tangent_of(a, ctx) for a in arrays]
        converter = f(*_primals(arrays, ctx))
        if all(t is None for t in tangents):
            return converter
        return _TangentConverter(ctx, converter, tangents)


def _each_linear(ctx, f, *arrays, **keywords):
    """``np.broadcast_arrays``, ``np.meshgrid``: each result is made from
    the arguments linearly, the same way from their tangents."""
    keywords = _plain_keywords(keywords, ctx, f)
    primals = _primals(arrays, ctx)
    tangents = [tangent_of(a, ctx) for a in arrays]
    values = f(*primals, **keywords)
    if all(t is None for t in tangents):
        return values
    parts = f(*[_or_zeros(t, p) for p, t in zip(primals, tangents)], **keywords)
    results = [carrying(ctx, value, np.array(part, dtype=np.result_type(value, 1.0)))
               for value, part in zip(values, parts)]
    return cassette.overdub(ctx, _as_type_of, values, results)


def _as_type_of(values, results):
    # Run under the context: the list (and the tuple made of it) keeps each
    # result's tangent.
    listed = [r for r in results]
    return tuple(listed) if isinstance(values, tuple) else listed


for _callee in (np.broadcast_arrays, np.meshgrid):
    _register(ForwardAD, _callee)(_each_linear)


# -- order statistics, interpolation, spectra --------------------------------------------

def _order_statistic(ctx, f, array, *rest, **keywords):
    """``np.median``, ``np.percentile``, ``np.quantile`` (linear
    interpolation, the default): piecewise linear in the sorted values, so
    the tangent is the same function of the tangents, reordered."""
    keywords = _plain_keywords(keywords, ctx, f)
    rest = _primals(rest, ctx)
    x, dx = untag(array, ctx), tangent_of(array, ctx)
    value = f(x, *rest, **keywords)
    if dx is None:
        return value
    options = dict(keywords)
    if f is not np.median:
        options.pop("q", None)
    axis = options.pop("axis", rest[1] if f is not np.median and len(rest) > 1 else
                       (rest[0] if f is np.median and rest else None))
    method = options.pop("method", "linear")
    keepdims = options.pop("keepdims", False)
    if options or method != "linear" or (f is np.median and len(rest) > 1) or (
            f is not np.median and len(rest) > 2):
        raise NotDifferentiable(f"{_name(f)}: no rule for these options")
    merged, restore = _axis_last(x, axis)
    tmerged, _ = _axis_last(np.broadcast_to(dx, np.shape(x)), axis)
    order = np.argsort(merged, axis=-1, kind="stable")
    ordered = np.take_along_axis(tmerged, order, axis=-1)
    q = rest[0] if f is not np.median else None
    # The same statistic of positions 0 … n-1 tells which sorted values it
    # interpolates between, and with which weights.
    n = merged.shape[-1]
    where = (np.median(np.arange(n)) if f is np.median else
             f(np.arange(n, dtype=float), q))
    low = np.floor(where).astype(int)
    high = np.minimum(low + 1, n - 1)
    weight = where - low
    t = (np.take(ordered, low, axis=-1) * (1 - weight)
         + np.take(ordered, high, axis=-1) * weight)
    if np.ndim(where) > 0:                  # several q: they come first
        t = np.moveaxis(t, -1, 0)
        return carrying(ctx, value, np.stack([restore(part, keepdims) for part in t]))
    return carrying(ctx, value, restore(t, keepdims))


for _callee in (np.median, np.percentile, np.quantile):
    _register(ForwardAD, _callee)(_order_statistic)


@_register(ForwardAD, np.interp)
def _interp(ctx, f, x, xp, fp, *rest, **keywords):
    """Linear interpolation: the tangent through ``x`` is the slope times
    its tangent, through ``fp`` the same interpolation of its tangent;
    ``xp`` (the abscissae) must carry none."""
    if tangent_of(xp, ctx) is not None or rest or keywords:
        raise NotDifferentiable("numpy.interp: a rule for x and fp only, without options")
    xv, xpv, fpv = untag(x, ctx), untag(xp, ctx), untag(fp, ctx)
    value = f(xv, xpv, fpv)
    dx, dfp = tangent_of(x, ctx), tangent_of(fp, ctx)
    t = None
    if dx is not None:
        slopes = np.diff(fpv) / np.diff(xpv)
        segment = np.clip(np.searchsorted(xpv, xv, side="right") - 1, 0, len(slopes) - 1)
        inside = (xv >= xpv[0]) & (xv <= xpv[-1])
        t = np.where(inside, slopes[segment], 0.0) * dx
    if dfp is not None:
        term = f(xv, xpv, dfp)
        t = term if t is None else t + term
    return carrying(ctx, value, t)


@_register(ForwardAD, np.linalg.eigvalsh)
def _eigvalsh(ctx, f, array, UPLO="L"):
    """dλ_i = v_iᵀ dA v_i (distinct eigenvalues of a symmetric matrix)."""
    a, da = untag(array, ctx), tangent_of(array, ctx)
    value = f(a, UPLO)
    if da is None:
        return value
    _, vectors = np.linalg.eigh(a, UPLO)
    # The matrix eigvalsh sees is the symmetric one its triangle makes.
    triangle = np.tril(da) if UPLO.upper() == "L" else np.triu(da)
    seen = triangle + np.swapaxes(triangle, -1, -2) - triangle * np.eye(da.shape[-1])
    return carrying(ctx, value, np.einsum("...ji,...jk,...ki->...i", vectors, seen, vectors))


def _sorted_rows(ctx, f, iterable, *, key=None, reverse=False):
    """``sorted(a)`` of a tagged array: its rows in order, each with its
    tangent (a list built under the context)."""
    if key is not None:
        raise NotDifferentiable("sorted(a, key=…) of an array with a tangent: no rule")
    primal, t = untag(iterable, ctx), tangent_of(iterable, ctx)
    order = sorted(range(len(primal)), key=primal.__getitem__, reverse=reverse)
    rows = (carrying(ctx, primal[i], None if t is None else t[i]) for i in order)
    return cassette.overdub(ctx, _listed, rows)


_register(ForwardAD, sorted, TAGGED_ARRAY)(_sorted_rows)


def _applied(function, *arguments):
    # Overdubbed: the call of ``function`` is an operation of the context
    # (a primitive such as math.sin gets its rule).
    return function(*arguments)


def _vectorized(ctx, f, vectorized, *args, **keywords):
    """``np.vectorize(g)(a, …)``: ``g`` run under the context on each
    element, so its own operations give each result its tangent."""
    if keywords or vectorized.signature is not None or vectorized.excluded:
        raise NotDifferentiable("np.vectorize: a rule for plain element-wise calls only")
    if all(tangent_of(a, ctx) is None for a in args):
        return f(vectorized, *_primals(args, ctx))
    primals = np.broadcast_arrays(*[np.asarray(untag(a, ctx)) for a in args])
    tangents = [np.broadcast_to(_or_zeros(tangent_of(a, ctx), p), p.shape)
                for a, p in zip(args, primals)]
    values, results_t = [], []
    for index in np.ndindex(primals[0].shape):
        elements = [carrying(ctx, p[index].item(), t[index].item())
                    for p, t in zip(primals, tangents)]
        out = cassette.overdub(ctx, _applied, vectorized.pyfunc, *elements)
        values.append(untag(out, ctx))
        tangent_ = tangent_of(out, ctx)
        results_t.append(0.0 if tangent_ is None else tangent_)
    shape = primals[0].shape
    value = np.asarray(values, dtype=vectorized.otypes[0] if vectorized.otypes else None
                       ).reshape(shape)
    return carrying(ctx, value, np.asarray(results_t, dtype=float).reshape(shape))


# A call of a vectorize object is a call of the object, whose __call__ then
# calls _call_as_normal (numpy 1.25 on): the method is where a rule can see it.
for _name_of in ("_call_as_normal", "__call__"):
    if isinstance(vars(np.vectorize).get(_name_of), types.FunctionType):
        _register(ForwardAD, vars(np.vectorize)[_name_of])(_vectorized)


# -- data: elements, stores, iteration --------------------------------------------------------

@_register(ForwardAD, operator.getitem, TAGGED_ARRAY, object)
@_register(ForwardAD, np.ndarray.__getitem__, TAGGED_ARRAY, object)
def _item(ctx, f, container, key):
    """``a[key]`` is linear: its tangent is the tangent's ``[key]`` (a view
    where the value is one, so that stores through either stay together)."""
    t = tangent_of(container, ctx)
    key = untag(key, ctx)
    value = f(untag(container, ctx), key)
    return value if t is None else carrying(ctx, value, t[key])


@_register(ForwardAD, operator.setitem, TAGGED_ARRAY, object, object)
@_register(ForwardAD, np.ndarray.__setitem__, TAGGED_ARRAY, object, object)
def _store(ctx, f, container, key, item):
    """``a[key] = v``: the tangent's ``[key]`` takes ``v``'s tangent."""
    array, t = untag(container, ctx), tangent_of(container, ctx)
    key = untag(key, ctx)
    f(array, key, untag(item, ctx))
    if not isinstance(t, np.ndarray) or t.shape != array.shape:
        raise NotDifferentiable("a[key] = v: the array carries no tangent array to store into")
    dv = tangent_of(item, ctx)
    t[key] = 0.0 if dv is None else dv


@_register(ForwardAD, operator.setitem, np.flatiter, object, cassette.Tagged)
@_register(ForwardAD, operator.setitem, np.flatiter, object, list)
@_register(ForwardAD, operator.setitem, np.ndarray, object, cassette.Tagged)
@_register(ForwardAD, np.ndarray.__setitem__, np.ndarray, object, cassette.Tagged)
@_register(ForwardAD, operator.setitem, np.ndarray, object, list)
@_register(ForwardAD, np.ndarray.__setitem__, np.ndarray, object, list)
@_register(ForwardAD, operator.setitem, np.ndarray, object, tuple)
@_register(ForwardAD, np.ndarray.__setitem__, np.ndarray, object, tuple)
def _store_untagged(ctx, f, container, key, item):
    """``a[key] = v`` where ``a`` carries no tangent and ``v`` (or a number
    in the list ``v``) one: ``a`` cannot keep it (cassette would keep each
    element's, which no rule here reads: an error, not a lost tangent)."""
    if istagged(container, ctx):        # both signatures match a tagged one
        return _store(ctx, f, container, key, item)
    if _nested_tangent(item, None, ctx) is None:
        return f(untag(container, ctx), untag(key, ctx), untag(item, ctx))
    raise NotDifferentiable(
        "a[key] = v: v carries a tangent and the array a carries none to keep it in "
        "(make a from a tagged array: np.zeros_like(x), x.copy(), …)")


def _in_place(ctx, f, container, other):
    """``a += v`` … of a tagged array changes ``a`` in place, and its
    tangent with it (views of ``a`` see both)."""
    array, t, dv = untag(container, ctx), tangent_of(container, ctx), tangent_of(other, ctx)
    v = untag(other, ctx)
    fresh = not (isinstance(t, np.ndarray) and t.shape == array.shape and t.flags.writeable)
    if fresh:
        t = _zeros(array) if t is None else np.array(np.broadcast_to(t, array.shape),
                                                     dtype=np.result_type(array, 1.0))
    if f is operator.iadd or f is operator.isub:
        if dv is not None:
            f(t, dv)
    elif f is operator.imul:
        t *= v
        if dv is not None:
            t += array * dv
    else:
        t /= v
        if dv is not None:
            t -= array * dv / (v * v)
    f(array, v)
    return tag(array, ctx, t) if fresh else container


for _callee in (operator.iadd, operator.isub, operator.imul, operator.itruediv):
    for _other in (object, cassette.Tagged):
        _register(ForwardAD, _callee, TAGGED_ARRAY, _other)(_in_place)


def _rows(ctx, array):
    primal, t = untag(array, ctx), tangent_of(array, ctx)
    if t is None:
        return iter(primal)
    return (carrying(ctx, primal[i], t[i]) for i in range(len(primal)))


@_register(ForwardAD, iter, TAGGED_ARRAY)
def _iterate(ctx, f, array):
    """``for v in a``: the rows, each with its tangent."""
    return _rows(ctx, array)


def _listed(rows):
    # Run under the context (see _tolist): the list it builds records each
    # row's tangent, as any list a program builds in a tagged run does.
    return [row for row in rows]


@_register(ForwardAD, np.ndarray.tolist, TAGGED_ARRAY)
def _tolist(ctx, f, array):
    """``a.tolist()``: nested lists of Python numbers, each with its
    tangent."""
    primal, t = untag(array, ctx), tangent_of(array, ctx)
    if t is None or primal.ndim == 0:
        value = primal.tolist()
        return value if t is None else carrying(ctx, value, float(t))
    rows = (_tolist(ctx, f, carrying(ctx, primal[i], t[i])) if primal.ndim > 1
            else carrying(ctx, primal[i].item(), t[i].item()) for i in range(len(primal)))
    return cassette.overdub(ctx, _listed, rows)


@_register(ForwardAD, list, TAGGED_ARRAY)
@_register(ForwardAD, tuple, TAGGED_ARRAY)
def _sequence_of(ctx, f, array):
    """``list(a)``/``tuple(a)``: the rows, each with its tangent."""
    listed = cassette.overdub(ctx, _listed, _rows(ctx, array))
    return listed if f is list else cassette.overdub(ctx, tuple, listed)


@_register(ForwardAD, abs, TAGGED_ARRAY)
def _abs(ctx, f, array):
    x, t = untag(array, ctx), tangent_of(array, ctx)
    return carrying(ctx, abs(x), None if t is None else np.sign(x) * t)


#: Attributes of a tagged array (or number) that are linear in it.
_LINEAR_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})
#: Attributes that would hand out its data another way.
_DATA_ATTRIBUTES = frozenset({"flat", "base", "data", "ctypes"})
#: Attributes that say something of it and carry no tangent.
_DESCRIBING_ATTRIBUTES = frozenset({"shape", "ndim", "size", "dtype", "itemsize", "nbytes",
                                    "strides", "flags", "__array_priority__",
                                    "__array_interface__"})


@_register(ForwardAD, getattr, cassette.Tagged, object, cassette.Vararg(object))
def _attribute(ctx, f, obj, name, *default):
    """``a.T``, ``a.real``, ``a.imag`` of a tagged array or number are
    linear; its shape, size, dtype … carry no tangent; anything else —
    methods above all, which cassette binds to the tagged value so that
    their calls see it — is cassette's to read."""
    name = untag(name, ctx)
    if name in _LINEAR_ATTRIBUTES:
        t = tangent_of(obj, ctx)
        value = getattr(untag(obj, ctx), name, *default)
        return value if t is None else carrying(ctx, value, getattr(np.asarray(t), name))
    if name in _DESCRIBING_ATTRIBUTES:
        return getattr(untag(obj, ctx), name, *default)
    if name in _DATA_ATTRIBUTES and tangent_of(obj, ctx) is not None:
        raise NotDifferentiable(f"a.{name} of an array with a tangent: no rule (use a.ravel(), "
                                f"a.copy() …)")
    return cassette.OverdubInstead


# -- methods that change an array in place --------------------------------------------------

@_register(ForwardAD, np.ndarray.sort, TAGGED_ARRAY, cassette.Vararg(object))
def _sort(ctx, f, array, axis=-1, **keywords):
    """``a.sort()`` permutes the tangent as it permutes ``a``."""
    x, t = untag(array, ctx), tangent_of(array, ctx)
    keywords = _plain_keywords(keywords, ctx, f)
    order = np.argsort(x, axis=axis, kind="stable")
    f(x, axis, **keywords)
    if t is not None:
        t[...] = np.take_along_axis(np.broadcast_to(t, x.shape), order, axis=axis) \
            if axis is not None else np.ravel(t)[order]


@_register(ForwardAD, np.ndarray.fill, TAGGED_ARRAY, object)
def _fill(ctx, f, array, value):
    x, t = untag(array, ctx), tangent_of(array, ctx)
    f(x, untag(value, ctx))
    dv = tangent_of(value, ctx)
    if isinstance(t, np.ndarray):
        t[...] = 0.0 if dv is None else dv
    elif dv is not None:
        raise NotDifferentiable("a.fill(v): the array carries no tangent array to fill")


@_register(ForwardAD, np.copyto)
def _copyto(ctx, f, destination, source, casting="same_kind", where=True):
    d, s = untag(destination, ctx), untag(source, ctx)
    where = untag(where, ctx)
    f(d, s, casting=casting, where=where)
    t, ds = tangent_of(destination, ctx), tangent_of(source, ctx)
    if isinstance(t, np.ndarray):
        np.copyto(t, 0.0 if ds is None else ds, where=where)
    elif ds is not None:
        raise NotDifferentiable("np.copyto: the destination carries no tangent to copy into")


def _in_place_without_rule(ctx, f, array, *args, **keywords):
    if tangent_of(array, ctx) is None and not any(
            tangent_of(a, ctx) is not None for a in (*args, *keywords.values())):
        return f(untag(array, ctx), *_primals(args, ctx),
                 **_plain_keywords(keywords, ctx, f))
    raise NotDifferentiable(f"{_name(f)} changes an array with a tangent in place: no rule")


for _callee in (np.ndarray.partition, np.ndarray.put, np.ndarray.resize, np.ndarray.itemset
                if hasattr(np.ndarray, "itemset") else None, np.ndarray.setfield,
                np.ndarray.byteswap, np.put, np.place, np.putmask, np.fill_diagonal):
    if _callee is not None:
        _register(ForwardAD, _callee, TAGGED_ARRAY, cassette.Vararg(object))(
            _in_place_without_rule)
