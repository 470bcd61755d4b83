"""The entry points: ``overdub`` and ``canoverdub`` (reference §3).

The runtime implementation is chosen here, once: the Cython core unless
``CASSETTE_PURE_PYTHON=1`` is set (or the core is not built).

Tracebacks: an exception leaving ``overdub`` has the library's own frames
removed from its traceback, so it shows the caller and the user's frames
only (reference §3.4).  ``overdub`` is a small C function from the core for this
reason: a Python function cannot keep its own frame out of a traceback.
"""

from __future__ import annotations

import collections
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, ParamSpec, TypeVar

from . import callables, locks
from .engine import check_arguments, operation_has_body
from .operations import OPERATIONS
from .context import Context
from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

if os.environ.get("CASSETTE_PURE_PYTHON", "") not in ("", "0"):
    from ._pyruntime import Runtime
    IMPLEMENTATION = "python"
else:
    try:
        from ._core import Runtime, install_routing
        IMPLEMENTATION = "cython"
        install_routing()
    except ImportError:  # not built: a source checkout without a compiler
        from ._pyruntime import Runtime
        IMPLEMENTATION = "python"


#: How many top-level runtimes keep their caches (rewritten bodies,
#: resolved call targets); the least recently entered beyond that are
#: released (see ``Runtime.release``), so contexts nobody uses any more can
#: be collected.
RUNTIMES_KEPT = 16

_recent_runtimes = collections.OrderedDict()
# Serialises runtime_of: iterating over the recent runtimes can let another
# thread in (a garbage collection run by an allocation calls finalizers).
_recent_lock = locks.lock()


def runtime_of(ctx):
    """The runtime serving ``ctx`` at top level, noted as the most recently
    entered.  On first use: the runtime of an earlier context of the same
    kind that is done with it, when one adopts ``ctx`` (``Runtime.adopt``:
    a context per call, as ``enabletagging`` makes, then costs no new
    rewriting and no new warm-up), else a new one."""
    with _recent_lock:
        recent = _recent_runtimes
        runtime = ctx._runtime
        if runtime is None:
            for candidate in reversed(recent):
                if candidate.adopt(ctx):
                    runtime = candidate
                    break
            else:
                runtime = ctx._runtime = Runtime(ctx)
        if recent and next(reversed(recent)) is runtime:
            return runtime
        runtime.retain()
        recent[runtime] = None
        recent.move_to_end(runtime)
        while len(recent) > RUNTIMES_KEPT:
            recent.popitem(last=False)[0].release()
        return runtime


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _overdub(ctx: Context, f: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
    """Run ``f(*args, **kwargs)`` with every operation in its body — and,
    recursively, in everything it calls — routed through ``ctx``.

    Returns what the plain call returns and raises what it raises.  The call
    of ``f`` itself is not hooked (write ``overdub(ctx, lambda: f(x))`` to hook
    it too).  Called from code that is itself being overdubbed, the enclosing
    context intercepts everything the inner run does, its handlers included.
    """
    check_arguments(ctx, f)
    return runtime_of(ctx).run(f, args, kwargs, ctx)


if TYPE_CHECKING:
    # What a type checker sees of the C function below: _overdub's signature.
    overdub = _overdub
else:
    try:
        from ._core import make_entry
    except ImportError:  # not built: the entry keeps its own frame
        overdub = _overdub
    else:
        overdub = make_entry(_overdub, callables.remove_library_entries, __name__)
callables.register_nested_entry(overdub)
callables.register_nested_entry(_overdub)


def canoverdub(ctx: Context, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> bool:
    """True when cassette can run ``f``'s body overdubbed; False when
    ``overdub(ctx, f, …)`` would go straight to ``fallback``."""
    check_arguments(ctx, f)
    callee, _bound = callables.split_bound(f)
    if callables.is_frame_sensitive(callee):
        return False
    operation = OPERATION_OF_CALLEE.get(id(callee))
    if operation is not None and operation.callee is callee:
        return not kwargs and operation_has_body(operation.name, args)
    return callables.body_kind(callee) is not None


#: The operations of reference §3.1 by the identity of the callee hooks see.
OPERATION_OF_CALLEE = {id(op.callee): op for op in OPERATIONS.values()}
