"""Shared helpers of the ``test_overdub_*`` behaviour tests (reference §3).

Not a test module: imported by the tests (pytest puts ``tests/`` on
``sys.path``).
"""

import cassette


class Recorder(cassette.Context):
    """Records every operation as ``(f, args, kwargs)`` in ``metadata``."""

    def prehook(self, f, *args, **kwargs):
        self.metadata.append((f, args, kwargs))


def record(fn, *args, **kwargs):
    """``(result, trace)`` of ``overdub(Recorder(), fn, *args, **kwargs)``."""
    ctx = Recorder(metadata=[])
    out = cassette.overdub(ctx, fn, *args, **kwargs)
    return out, ctx.metadata


def callees(trace):
    """The callees of a trace, in order."""
    return [f for f, _args, _kwargs in trace]


def only(trace, *fs):
    """The entries of ``trace`` whose callee is one of ``fs`` (by identity)."""
    return [entry for entry in trace if any(entry[0] is f for f in fs)]


def name_of(f):
    """A version-independent printable name of a callee."""
    module = getattr(f, "__module__", None)
    qualname = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    if qualname is None:
        return repr(f)
    if module in ("_operator", "operator"):
        return "operator." + qualname
    if module == "builtins" or module is None:
        objclass = getattr(f, "__objclass__", None)
        if objclass is not None and "." not in qualname:
            return f"{objclass.__qualname__}.{qualname}"
        return qualname
    return qualname
