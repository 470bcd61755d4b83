"""Provenance on cassette's tagging API: which inputs each output depends on.

``dependencies(f, xs)`` runs ``f`` unmodified on a list or numpy array
``xs`` whose element ``j`` carries the set ``{j}`` as metadata, and returns,
for each element of the output (a number, a list or an array), the set of
input indices it depends on — the sparsity pattern of ``f``'s Jacobian.

One ``fallback`` does the work: every primitive still runs as cassette's
default fallback runs it (arguments untagged, metadata propagated through
containers and objects), and a numeric result that does not carry metadata
already gets the union of its arguments' — per element for numpy arrays,
with numpy's broadcasting.  Indexing an array selects its elements'
sets; reductions (``sum``, ``np.add.reduce`` …) unite them; ``@`` unites
along the products that are not structurally zero.

Only the public API is used: ``enabletagging``, ``tag``, ``untag``,
``istagged``, ``metadata``, ``metameta``, ``overdub`` and a context method.

Run it: ``python examples/provenance.py``.
"""

import operator

import numpy as np

import cassette
from cassette import enabletagging, istagged, metadata, metameta, tag, untag

__all__ = ["Provenance", "dependencies"]

_NONE = frozenset()
_unite = np.frompyfunc(frozenset.union, 2, 1)
_NUMBERS = (int, float, complex, np.number)


class Provenance(cassette.Context):
    """Numbers carry a frozenset of input indices; arrays an object array
    of them (one per element)."""

    @classmethod
    def metadatatype(cls, T):
        if issubclass(T, np.ndarray):
            return np.ndarray
        if issubclass(T, _NUMBERS) and T is not bool:
            return frozenset
        return None

    def fallback(self, f, /, *args, **kwargs):
        if f in (sum, min, max) and args and not isinstance(args[0], (list, tuple)):
            # A generator: its values (tagged) are needed twice.
            args = (list(args[0]),) + args[1:]
        out = super().fallback(f, *args, **kwargs)
        if (istagged(out, self) or not isinstance(out, (*_NUMBERS, np.ndarray))
                or isinstance(out, bool)):      # a truth value carries no provenance
            return out
        sets = _sets_of(self, f, args, out)
        if sets is None:
            return out
        return tag(out, self, sets)


def _sets(value, ctx):
    """The sets ``value`` carries: a frozenset, an object array, or None."""
    if istagged(value, ctx):
        data = metadata(value, ctx)
        return None if data is cassette.NoMetaData else data
    per_element = _element_sets(value, ctx)
    if per_element is None:
        return None
    found = [s for s in per_element if s is not None]
    return frozenset().union(*found) if found else None


def _element_sets(value, ctx):
    """For a list or tuple, the sets of each element (None where none)."""
    if not isinstance(value, (list, tuple)):
        return None
    components = metameta(value, ctx)
    if isinstance(components, list):          # recorded: primal elements
        return [None if m.data is cassette.NoMetaData else m.data for m in components]
    return [metadata(v, ctx) if istagged(v, ctx) else None for v in value]


def _as_array(sets, like):
    """``sets`` as an object array broadcastable against array ``like``."""
    if isinstance(sets, np.ndarray):
        return sets
    array = np.empty(np.shape(like), dtype=object)
    array.fill(sets)
    return array


def _everything(sets):
    if isinstance(sets, np.ndarray):
        return frozenset().union(*sets.ravel()) if sets.size else _NONE
    return sets


def _sets_of(ctx, f, args, out):
    """The sets of ``out = f(*args)``, or None when no argument has any."""
    found = [(a, _sets(a, ctx)) for a in args]
    if all(s is None for _, s in found):
        return None
    if f is operator.getitem and found[0][1] is not None and isinstance(
            untag(args[0], ctx), np.ndarray):
        return _as_array(found[0][1], untag(args[0], ctx))[untag(args[1], ctx)]
    if (f is np.array or f is np.asarray) and isinstance(out, np.ndarray) and out.ndim == 1:
        per_element = _element_sets(args[0], ctx)
        if per_element is not None and len(per_element) == len(out):
            sets = np.empty(len(out), dtype=object)
            for i, element in enumerate(per_element):
                sets[i] = _NONE if element is None else _everything(element)
            return sets
    if f in (operator.matmul, np.matmul, np.dot):
        return _product_sets(ctx, args, found)
    if any(f is g for g in (np.cumsum, np.cumprod, np.ndarray.cumsum, np.ndarray.cumprod)):
        # Element i of a running sum depends on elements 0 … i.
        return _unite.accumulate(_as_array(found[0][1], untag(args[0], ctx)).ravel())
    if isinstance(out, np.ndarray) and not _is_reduction(f):
        # Elementwise, with broadcasting.
        result = np.empty(out.shape, dtype=object)
        result.fill(_NONE)
        for value, sets in found:
            if sets is not None:
                primal = untag(value, ctx)
                result = _unite(result, _as_array(sets, primal) if isinstance(
                    primal, np.ndarray) else sets)
        return np.asarray(result, dtype=object)
    # A number out: it may depend on everything its arguments carry.
    return frozenset().union(*(_everything(s) for _, s in found if s is not None))


_REDUCTIONS = (np.ufunc.reduce, sum, min, max, np.sum, np.mean, np.prod)


def _is_reduction(f):
    return any(f is r for r in _REDUCTIONS)


def _product_sets(ctx, args, found):
    """``A @ B``: element (i, k) depends on what A[i, j] and B[j, k] carry
    for every j where neither factor is zero."""
    (a, sets_a), (b, sets_b) = found[:2]
    A, B = np.asarray(untag(a, ctx)), np.asarray(untag(b, ctx))
    vector = B.ndim == 1
    A2 = A if A.ndim == 2 else A[np.newaxis, :]
    B2 = B[:, np.newaxis] if vector else B
    SA = _as_array(sets_a if sets_a is not None else _NONE, A).reshape(A2.shape)
    SB = _as_array(sets_b if sets_b is not None else _NONE, B).reshape(B2.shape)
    out = np.empty((A2.shape[0], B2.shape[1]), dtype=object)
    for i in range(out.shape[0]):
        for k in range(out.shape[1]):
            deps = set()
            for j in range(A2.shape[1]):
                if A2[i, j] != 0 and B2[j, k] != 0:
                    deps |= SA[i, j] | SB[j, k]
            out[i, k] = frozenset(deps)
    if vector:
        out = out[:, 0]
    if A.ndim == 1:
        out = out[0]
    return out


def dependencies(f, xs):
    """For each element of ``f(xs)`` (a list, tuple or array; or a number),
    the frozenset of indices of ``xs`` (a list or 1-D array) it depends on."""
    ctx = enabletagging(Provenance(), f)
    if isinstance(xs, np.ndarray):
        sets = np.empty(len(xs), dtype=object)
        for j in range(len(xs)):
            sets[j] = frozenset({j})
        point = tag(xs, ctx, sets)
    else:
        point = [tag(x, ctx, frozenset({j})) for j, x in enumerate(xs)]
    out = cassette.overdub(ctx, lambda values: f(values), point)
    if isinstance(out, (list, tuple)):
        components = metameta(out, ctx)
        if components is cassette.NoMetaMeta:
            return [_NONE] * len(out)
        return [_NONE if m.data is cassette.NoMetaData else _everything(m.data)
                for m in components]
    sets = metadata(out, ctx)
    if sets is cassette.NoMetaData:
        return _NONE if not isinstance(out, np.ndarray) else [_NONE] * len(out)
    if isinstance(sets, np.ndarray):
        return list(sets.ravel())
    return sets


if __name__ == "__main__":
    def stencil(x):
        return [x[i - 1] - 2 * x[i] + x[i + 1] for i in range(1, len(x) - 1)]

    print("stencil on a list :", dependencies(stencil, [1.0, 2.0, 4.0, 8.0, 16.0]))
    print("differences (numpy):", dependencies(lambda a: a[1:] - a[:-1], np.arange(5.0)))
