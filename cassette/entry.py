"""The entry points: ``overdub`` and ``canoverdub`` (SPEC §3).

The runtime implementation is chosen here, once: the Cython core unless
``CASSETTE_PURE_PYTHON=1`` is set (or the core is not built).
"""

import os

from . import callables
from .engine import check_arguments

if os.environ.get("CASSETTE_PURE_PYTHON", "") not in ("", "0"):
    from ._pyruntime import Runtime
    IMPLEMENTATION = "python"
else:
    try:
        from ._core import Runtime
        IMPLEMENTATION = "cython"
    except ImportError:  # not built: a source checkout without a compiler
        from ._pyruntime import Runtime
        IMPLEMENTATION = "python"


def runtime_of(ctx):
    """The runtime serving ``ctx`` at top level (created on first use)."""
    runtime = ctx._runtime
    if runtime is None:
        runtime = ctx._runtime = Runtime(ctx)
    return runtime


@callables.register_nested_entry
def overdub(ctx, f, /, *args, **kwargs):
    """Run ``f(*args, **kwargs)`` with every operation in its body — and,
    recursively, in everything it calls — routed through ``ctx``.

    Returns what the plain call returns and raises what it raises.  The call
    of ``f`` itself is not hooked (write ``overdub(ctx, lambda: f(x))`` to hook
    it too).  Called from code that is itself being overdubbed, the enclosing
    context intercepts everything the inner run does, its handlers included.
    """
    check_arguments(ctx, f)
    return runtime_of(ctx).run(f, args, kwargs)


def canoverdub(ctx, f, /, *args, **kwargs):
    """True when cassette can run ``f``'s body overdubbed; False when
    ``overdub(ctx, f, …)`` would go straight to ``fallback``."""
    check_arguments(ctx, f)
    callee, _bound = callables.split_bound(f)
    if callee in callables.FRAME_SENSITIVE:
        return False
    return callables.body_kind(callee) is not None
