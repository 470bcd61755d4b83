"""Decisions the two runtimes share.

The Cython core (``_core.pyx``) and the pure-Python runtime
(``_pyruntime.py``) execute the same protocol; everything they *decide* —
which sites a context class needs rewritten, what a call site should call,
how a class is instantiated — is computed here, once, and cached by them.
"""

import __future__
import _imp
import builtins
import functools
import operator
import sys
import types
import weakref

from . import callables, dispatch, rewrite, routing
from .context import checks_metadata_loss
from ._singletons import TAGGED_TAG_SLOT, TAGGED_VALUE_SLOT
from .passes import NoPass, Pass
from .operations import OPERATIONS, ROW_CALLEES, SPECIAL_METHODS as OPERATIONS_SPECIAL_METHODS, Intercept
from .rewrite import ANNOTATIONS_LOAD, TAGGING_KINDS, kinds_for, template_for
from .versions import LAYER
# Bound at import, while this module's frames keep the program's builtins
# (see cassette/_builtins.py).
from ._builtins import (AssertionError, BaseException, Exception, TypeError, bool, callable,
    classmethod, compile, dict, eval, exec, getattr, isinstance, issubclass, len, memoryview,
    id, object, property, setattr, staticmethod, str, tuple, type)

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_CodeType = types.CodeType
_create_dynamic = _imp.create_dynamic
_FunctionType = types.FunctionType
_MethodType = types.MethodType
_getframe = sys._getframe
_modules = sys.modules
_partial = functools.partial
_ref = weakref.ref

_EMPTY = dispatch.Plan.empty

#: Most entries each of a runtime's resolution caches (functions, closures,
#: other callees, bound handlers) holds before it is emptied: functions and
#: classes can be made at run time.  Both runtimes use it.
RESOLUTION_CACHE_MAX = 4096

#: Most iterators a thread has noted for generator expressions not yet
#: started (``give_iterator``, 3.15): a call abandoned before its prologue
#: (an ``execute`` that does not make it) leaves its note, so the oldest
#: goes when the thread has this many.  Both runtimes use it.
GIVEN_ITERATORS_KEPT = 16

_OPTIONAL_ROWS = (
    Intercept.ARITHMETIC, Intercept.COMPARISONS, Intercept.SUBSCRIPTS,
    Intercept.ATTRIBUTES, Intercept.ITERATION,
)


def check_arguments(ctx, f):
    """The TypeErrors of reference §7 for ``overdub(ctx, f, …)``."""
    if not getattr(type(ctx), "_cassette_context_class", False):
        raise TypeError(
            "overdub() needs a cassette.Context instance as its first argument, "
            f"not {type(ctx).__name__!r}"
        )
    if not callable(f):
        raise TypeError(f"overdub(): {type(f).__name__!r} object is not callable")


def intercepted_rows(ctx_type, tagging=False):
    """The rows of reference §3.1 whose sites must be rewritten for ``ctx_type``:
    those the class does not narrow away and that some handler could match
    — every one it does not narrow away when it tags (``tagging``) and
    looks for metadata lost (an operator left to the interpreter would drop
    a tagged operand's metadata unseen).
    Calls and ``with`` blocks are always rewritten: recursion happens at
    calls, and a ``with`` block calls ``__enter__``/``__exit__`` — left to
    the interpreter, a Python context manager's methods (and everything they
    call, e.g. all of ``asyncio.run``) would run un-rewritten."""
    narrowed = getattr(ctx_type, "intercept", Intercept.ALL)
    rows = Intercept.CALLS | Intercept.WITH
    every = tagging and checks_metadata_loss(ctx_type)
    for row in _OPTIONAL_ROWS:
        if row & narrowed and (every or dispatch.could_match(ctx_type, ROW_CALLEES[row])):
            rows |= row
    return rows


#: The rows a tagging context needs rewritten whatever its handlers: metadata
#: propagates through attributes, subscripts and iteration (reference §6).
_TAGGING_ROWS = Intercept.ATTRIBUTES | Intercept.SUBSCRIPTS | Intercept.ITERATION


def intercepted_kinds(ctx_types, tagging=False):
    """The site kinds to rewrite for a chain of context classes (the running
    context and, for a nested overdub, every context enclosing it);
    ``tagging``: some context of the chain has tagging enabled, so the
    propagation sites (displays, unpacking, ``is``, globals …) are rewritten
    too."""
    key = (ctx_types, tagging)
    try:
        kinds = _kinds_by_chain.get(key)
    except TypeError:           # an unhashable metaclass: no caching
        key = kinds = None
    if kinds is None:
        rows = Intercept.CALLS
        for ctx_type in ctx_types:
            rows |= intercepted_rows(ctx_type, tagging)
        kinds = kinds_for(rows | _TAGGING_ROWS) | TAGGING_KINDS if tagging else kinds_for(rows)
        if LAYER.annotation_attributes and routing.is_installed():
            kinds |= {ANNOTATIONS_LOAD}
        if key is not None and len(_kinds_by_chain) < 1024:
            _kinds_by_chain[key] = kinds
    return kinds


#: (chain of context classes, tagging) -> kinds; every runtime asks, and the
#: answer changes only with the dispatch generation.
_kinds_by_chain = {}
dispatch.on_generation_change(lambda generation: _kinds_by_chain.clear())


def chain_has_tagging(runtime):
    """True when ``runtime``'s context or an enclosing one has tagging."""
    while runtime is not None:
        if runtime.ctx.tag is not None:
            return True
        runtime = runtime.parent
    return False


def tagging_slot(runtime, name):
    """The callable bound for propagation slot ``name`` (see
    :data:`dispatch.TAGGING_SLOTS`) in code rewritten for ``runtime``: its
    context's, passing results on to the enclosing runtime's when that one
    propagates too."""
    parent = runtime.parent
    outer = (tagging_slot(parent, name)
             if parent is not None and chain_has_tagging(parent) else None)
    return dispatch.TAGGING_SLOTS[name](runtime.ctx, outer)


def context_passes(runtime):
    """The passes code run by ``runtime`` goes through: ``(context class,
    Pass)`` of its context, then of each enclosing one (an enclosing
    context's pass sees what the inner one made, as in Cassette, where the
    outer context transforms the inner overdub's code)."""
    passes = []
    while runtime is not None:
        pass_ = runtime.ctx.pass_
        if not isinstance(pass_, Pass):
            raise TypeError(f"{type(runtime.ctx).__qualname__}.pass_ must be a cassette.Pass, "
                            f"got {pass_!r}")
        if pass_ is not NoPass:
            passes.append((type(runtime.ctx), pass_))
        runtime = runtime.parent
    return tuple(passes)


def rewritten_function(function, runtime, escapes=False):
    """A new function running ``function``'s body transformed by
    ``runtime``'s passes and rewritten for its kinds, with the template's
    slots bound to ``runtime`` (``Runtime.bind``; ``escapes``: the code is
    handed to the user); same globals, closure, defaults and names, so it
    behaves as the original."""
    return function_running(runtime.bind(template_of(function, runtime), escapes), function)


def template_of(function, runtime):
    """The template of ``function``'s code for ``runtime``: rewritten for
    its kinds, after its passes."""
    return template_for(function.__code__, runtime.kinds, runtime.passes, function)


def function_running(code, function):
    """A new function running ``code`` with everything else of ``function``:
    globals, names, defaults, keyword defaults and closure (the Cython core
    makes the same in C: ``cassette_function_running``)."""
    clone = _FunctionType(code, function.__globals__, function.__name__,
                          function.__defaults__, function.__closure__)
    clone.__kwdefaults__ = function.__kwdefaults__
    clone.__qualname__ = function.__qualname__
    return clone


def constructor_template(runtime, init):
    """The template of ``init`` (a class's Python ``__init__``) as a
    constructor for ``runtime`` (:func:`rewrite.constructor_template`), or
    None: also when ``runtime`` has passes, which see ``__init__`` as it is."""
    if runtime.passes:
        return None
    return rewrite.constructor_template(init.__code__, runtime.kinds)


def function_recipe(runtime, f):
    """How ``runtime`` calls every function that has ``f``'s code and nothing
    to tell it apart — no handler of the chain names it, it has no
    attributes — as :func:`target` decides it for each one: the functions a
    program makes at run time (closures, lambdas, generator expressions,
    nested ``def``) then cost one new function each, not a decision.

    A tuple ``(template, plan, enclosing)``: the target of such a function
    ``g`` is ``function_running(runtime.bind(template), g)``; when ``plan`` is not None, wrapped as ``runtime.hooked(g, plan, body)``;
    then, for each ``(outer, plan)`` of ``enclosing`` in order, as
    ``outer.hooked(g, plan, inner)`` (see :func:`enclosed`).  None when each
    function of this code needs :func:`target`."""
    if type(f) is not _FunctionType or f.__dict__ or names_callee(runtime, f):
        return None
    decision = decide(type(runtime.ctx), f)
    if decision.plan is None or decision.body != callables.FUNCTION:
        return None
    return (template_of(f, runtime), None if decision.plan is _EMPTY else decision.plan,
            enclosing_plans(runtime, f))


def partial_recipe(runtime, partial):
    """How ``runtime`` calls every ``functools.partial`` that no handler of
    the chain names, as :func:`target` decides it for each one: a tuple
    ``(plan, enclosing)`` as :func:`function_recipe`'s, the body being
    ``functools.partial(runtime.resolve(p.func), *p.args, **p.keywords)``
    — what :func:`call_partial` calls, resolved when the call is made.
    None when each partial needs :func:`target`."""
    if type(partial) is not _partial or names_callee(runtime, partial):
        return None
    decision = decide(type(runtime.ctx), partial)
    if decision.plan is None or decision.body != callables.PARTIAL:
        return None
    return (None if decision.plan is _EMPTY else decision.plan,
            enclosing_plans(runtime, partial))


def names_callee(runtime, callee):
    """Whether a handler of ``runtime``'s context or of an enclosing one
    names ``callee`` itself."""
    return named_callees(runtime).get(id(callee)) is callee


def named_callees(runtime):
    """The callees that handlers of ``runtime``'s context, or of an
    enclosing one, name: ``{id(callee): callee}`` (a runtime caches it
    until the dispatch generation changes)."""
    named = {}
    while runtime is not None:
        named.update(dispatch.named_callees(type(runtime.ctx)))
        runtime = runtime.parent
    return named


class Decision:
    """What a runtime should do with one callee.

    ``callee``  what hooks see (after :func:`callables.split_bound`)
    ``bound``   the bound ``self`` to put first, or ``callables.NO_SELF``
    ``plan``    the :class:`dispatch.Plan` of the callee (``Plan.empty`` when
                no handler can match it; None for frame-sensitive callees)
    ``body``    a body kind of :mod:`cassette.callables`, or None (primitive)
    """

    __slots__ = ("callee", "bound", "plan", "body")

    def __init__(self, callee, bound, plan, body):
        self.callee = callee
        self.bound = bound
        self.plan = plan
        self.body = body


def decide(ctx_type, f):
    """The :class:`Decision` for calling ``f`` under a context of ``ctx_type``."""
    if type(f) is _FunctionType:
        known = _decisions.get(id(f))
        if (known is not None and known[0]() is f and known[1] is f.__code__
                and known[2]() is ctx_type and known[3] == dispatch._generation):
            return Decision(f, callables.NO_SELF, _EMPTY, known[4])
    callee, bound = callables.split_bound(f)
    if callables.is_frame_sensitive(callee) or callables.runs_rewritten_code(callee):
        # Runs as called: reading its caller's frame, or overdubbed already.
        return Decision(callee, bound, None, None)
    if type(callee) is _FunctionType and LAYER.is_inlined_scope(callee.__code__):
        decision = Decision(callee, bound, _EMPTY, callables.FUNCTION)
    else:
        decision = Decision(callee, bound, dispatch.plan(ctx_type, callee),
                            callables.body_kind(callee))
    if type(f) is _FunctionType and decision.plan is _EMPTY:
        if len(_decisions) >= DECISIONS_MAX:
            _decisions.clear()
        _decisions[id(f)] = (_ref(f), f.__code__, _ref(ctx_type), dispatch._generation,
                             decision.body)
    return decision


#: How many functions' decisions :data:`_decisions` keeps (then it starts
#: again empty).
DECISIONS_MAX = 1024

# id(function) -> (weak reference to it, its code, weak reference to the
# context class, the dispatch generation, its body kind): the decisions for
# plain functions no handler can match, which ``overdub`` of one function
# again and again would otherwise make every time (3.6 µs of the 8 µs an
# entry took).  What a decision reads of a function is its identity, its code
# and the plans of the generation: any change of those misses.
_decisions = {}


def target(runtime, f):
    """What ``runtime``'s call sites call instead of ``f`` (uncached).

    A runtime provides ``ctx``, ``parent``, ``resolve(f)``, ``call(f, …)``,
    ``rewritten(function)``, ``hooked(callee, plan, body)`` and
    ``nested_overdub()``; this function decides which of them to use.
    """
    if (type(f) is _FunctionType and "_cassette_method" in f.__dict__
            and chain_has_tagging(runtime)):
        # A tagged value's shim of its primal class's method (3.13 loads
        # methods natively): see call_shim.
        return _partial(call_shim, runtime, f)
    decision = decide(type(runtime.ctx), f)
    if decision.plan is None:          # frame-sensitive: runs as called
        return f
    body = body_of(runtime, decision)
    if decision.plan is _EMPTY:
        if body is None:
            if runtime.ctx.tag is not None and callable(f) and not _sees_tags(f):
                # Under tagging, primitives see primal values and metadata
                # propagates through them (reference §6).
                callee = decision.callee
                primitive = callee if runtime.parent is None else runtime.parent.resolve(callee)
                result = runtime.tagged_primitive(callee, primitive)
                if decision.bound is not callables.NO_SELF:
                    result = _MethodType(result, decision.bound)
                return result
            # A primitive nobody hooks: an enclosing context still sees it.
            return f if runtime.parent is None else runtime.parent.resolve(f)
        result = body
    else:
        if body is None:
            # A hooked primitive: what it wraps runs overdubbed when it calls it.
            routing.route_callee(decision.callee)
        result = runtime.hooked(decision.callee, decision.plan, body)
    if body is not None and runtime.parent is not None:
        result = enclosed(runtime, decision.callee, result)
    if decision.bound is not callables.NO_SELF:
        result = _MethodType(result, decision.bound)
    return result


def _sees_tags(f):
    """Whether ``f`` is one of the functions that see every context's tags
    (the tagging API)."""
    try:
        return f in dispatch.SEES_TAGS
    except TypeError:           # unhashable
        return False


def name_like(wrapper, f):
    """Give ``wrapper`` the ``__qualname__`` and ``__module__`` of ``f``: the
    interpreter's messages that name a callable (``len() argument after *
    must be an iterable``) then name ``f``, as without cassette."""
    missing = object()      # (made here: any object a module holds, f could too)
    for name in ("__qualname__", "__module__"):
        value = callables.static_attribute(f, name, missing)
        if value is missing:
            continue
        try:
            setattr(wrapper, name, value)
        except Exception:
            pass


@callables.acts_for_program
def call_shim(runtime, shim, obj, /, *args, **kwargs):
    """``obj.m(…)`` reached through a tagged value's shim of ``m``: for a
    value tagged by ``runtime``'s context or an enclosing one, the method
    itself with the tagged value first (as :func:`tagged_method` gives);
    for any other, the shim (which acts on the primal value)."""
    try:
        method = tagged_method(runtime, obj, shim.__name__)
        # A call that passed no keywords passes none on, not an empty
        # dictionary: a C function taking keywords tells the two apart
        # (xxsubtype.spamlist.staticmeth returns what it was given).  The
        # runtimes and the propagators forward calls the same way.
        if method is None:
            method = shim
        return method(obj, *args, **kwargs) if kwargs else method(obj, *args)
    except BaseException as exception:
        callables.drop_library_entries(exception)
        raise


@callables.acts_for_program
def call_untagged(ctx, callee, primitive, /, *args, **kwargs):
    """Primitive ``callee``, called as ``primitive``, for a tagging context:
    the default fallback under tagging (arguments untagged, metadata
    propagated)."""
    try:
        return dispatch.tagging_fallback(ctx, callee, primitive, args, kwargs)
    except BaseException as exception:
        callables.drop_library_entries(exception)
        raise


def enclosed(runtime, callee, inner):
    """``inner`` — a nested runtime's operation on ``callee``, which has a
    body — as an operation of every enclosing runtime too, the innermost
    enclosing one closest: the outer context sees the call like any other
    code's, before the inner context's hooks run.  (A primitive needs no
    wrapping: the nested runtime runs it through the enclosing one.)"""
    return hooked_as(runtime, callee, None, enclosing_plans(runtime, callee), inner)


def hooked_as(runtime, callee, plan, enclosing, body):
    """``body`` — what runs for ``callee`` — hooked by ``runtime``'s ``plan``
    (unless None), then by each ``(outer, plan)`` of ``enclosing``, the
    innermost first: how a recipe's target is made (the Cython core's
    ``_hooked_as``)."""
    if plan is not None:
        body = runtime.hooked(callee, plan, body)
    for outer, outer_plan in enclosing:
        body = outer.hooked(callee, outer_plan, body)
    return body


def enclosing_plans(runtime, callee):
    """``(outer runtime, plan)`` for each runtime enclosing ``runtime``, the
    innermost first, whose context has handlers that apply to ``callee``."""
    plans = []
    outer = runtime.parent
    while outer is not None:
        plan = dispatch.plan(type(outer.ctx), callee)
        if plan is not _EMPTY:
            plans.append((outer, plan))
        outer = outer.parent
    return tuple(plans)


def body_of(runtime, decision):
    """The callable running ``decision.callee``'s body overdubbed by
    ``runtime`` (called with the callee's own arguments), or None."""
    kind = decision.body
    callee = decision.callee
    if kind is None:
        return None
    if kind == callables.FUNCTION:
        return runtime.rewritten(callee)
    if kind == callables.INSTANTIATION:
        return runtime.instantiation(callee)
    if kind == callables.METACLASS_CALL or kind == callables.CALLABLE_INSTANCE:
        return call_body(runtime, callee)
    if kind == callables.TYPE_CALL:
        return _partial(instantiate, runtime.call)
    if kind == callables.PARTIAL:
        return _partial(call_partial, runtime.call, callee)
    if kind == callables.NESTED_OVERDUB:
        return runtime.nested_overdub()
    if kind == callables.SOURCE:
        return runtime.source_runner(callee)
    if kind == callables.BUILD_CLASS:
        return _partial(build_class, runtime)
    if kind == callables.ARRAY_FUNCTION:
        return runtime.array_function(callee)
    if kind == callables.EXTENSION_LOAD:
        return _partial(load_extension, callee)
    if kind == callables.FETCHING_CALL:
        return _partial(call_fetching, callee)
    raise AssertionError(f"unknown body kind {kind!r}")


def run(runtime, f, args, kwargs):
    """The entry of ``overdub``: ``f``'s body overdubbed by ``runtime`` (the
    call of ``f`` itself is not hooked), or ``fallback`` when it has none."""
    decision = decide(type(runtime.ctx), f)
    body = body_of(runtime, decision) if decision.plan is not None else None
    if body is None:
        return dispatch.fallback(runtime.ctx, f, *args, **kwargs)
    if decision.bound is not callables.NO_SELF:
        return body(decision.bound, *args, **kwargs)
    return body(*args, **kwargs)


def check_initialized(result):
    """Raise what ``type.__call__`` raises when ``__init__`` returned
    ``result`` and it is not None."""
    if result is not None:
        raise TypeError(f"__init__() should return None, not '{type(result).__name__}'")


@callables.acts_for_program
def instantiate(call, cls, /, *args, **kwargs):
    """``type.__call__(cls, *args, **kwargs)`` with ``__new__`` and
    ``__init__`` each called through ``call(f, *args, **kwargs)`` (an
    operation of the running context)."""
    try:
        obj = call(cls.__new__, cls, *args, **kwargs)
        # PyObject_TypeCheck: the real type's MRO, no __instancecheck__.
        if cls in callables.class_mro(type(obj)):
            check_initialized(call(type(obj).__init__, obj, *args, **kwargs))
        return obj
    except BaseException as exception:
        callables.drop_library_entries(exception)
        raise


@callables.acts_for_program
def call_partial(call, partial, /, *args, **kwargs):
    """The body of a ``functools.partial``: its function called (as an
    operation) with the stored and the given arguments."""
    try:
        if partial.keywords:
            kwargs = {**partial.keywords, **kwargs}
        return call(partial.func, *partial.args, *args, **kwargs)
    except BaseException as exception:
        callables.drop_library_entries(exception)
        raise


@callables.acts_for_program
def build_class(runtime, func, name, /, *bases, **kwds):
    """The body of ``__build_class__`` (a ``class`` statement): the same
    call with the class body rewritten, so it runs overdubbed."""
    try:
        if type(func) is _FunctionType and not callables.is_library_code(func.__code__):
            func = runtime.rewritten(func)
        for value in kwds.values():
            routing.route_argument(value)       # a metaclass that is a function
        routing.route_bases(bases)              # their __mro_entries__
        cls = _build_class(func, name, *bases, **kwds)
        if callables.is_class(cls):
            routing.route_class(cls)
        return cls
    except BaseException as exception:
        callables.drop_library_entries(exception)
        raise


_build_class = builtins.__build_class__

#: The compiler flags of ``__future__`` features, which ``exec``/``eval``
#: of a string inherit from the calling code (``PyCF_MASK``).
_FUTURE_FLAGS = functools.reduce(
    operator.or_, (getattr(__future__, name).compiler_flag
                   for name in __future__.all_feature_names))


@callables.acts_for_program
def run_source(runtime, evaluate, /, *args, **kwargs):
    """The body of ``exec`` and ``eval`` (``evaluate``): the same call with
    the code — compiled as the builtin would compile it — rewritten for
    ``runtime``, so it runs overdubbed (see :func:`source_call`).  The
    Cython core makes the same call from C (``SourceRunner``), so that no
    frame of cassette's stands between the code and its caller: a
    warning's ``stacklevel`` counts the frames of the stack."""
    try:
        call_args, call_kwargs, module = source_call(runtime, evaluate, args, kwargs)
        result = evaluate(*call_args, **call_kwargs)
        if module is not None:
            routing.route_module(module)
        return result
    except BaseException as exception:
        callables.drop_library_entries(exception)
        raise


def source_call(runtime, evaluate, args, kwargs):
    """How to run ``evaluate(*args, **kwargs)`` (``exec`` or ``eval``)
    overdubbed: ``(args, kwargs, module)``, the arguments to call
    ``evaluate`` with instead — the code compiled as the builtin would
    compile it and rewritten for ``runtime``, with the namespaces it would
    use — and the globals of a module whose body this runs (imported:
    routed once it has run, ``routing.route_module``), else None.  Where
    the builtin would raise, the arguments are the given ones, so that it
    raises its own error.

    Without namespaces the builtin uses its caller's globals and locals (and
    a string inherits the caller's ``__future__`` flags): the caller is the
    nearest frame of the program, skipping cassette's own."""
    bind = LAYER.exec_arguments if evaluate is exec else LAYER.eval_arguments
    try:
        source, globals_, locals_, closure = bind(*args, **kwargs)
    except TypeError:
        source = bind = None
    frame = program_frame()
    if bind is None or frame is None:
        return args, kwargs, None
    if globals_ is None:
        globals_ = frame.f_globals
        if locals_ is None:
            locals_ = LAYER.default_locals(frame)
    elif locals_ is None:
        locals_ = globals_
    code = _compiled_source(source, evaluate is exec, frame)
    if code is None or not isinstance(globals_, dict):
        return (source, globals_, locals_), {}, None
    if not callables.is_library_code(code):
        code = runtime.bind(template_for(code, runtime.kinds, runtime.passes))
    if evaluate is exec:
        module = globals_ if locals_ is globals_ and "__name__" in globals_ else None
        return (code, globals_, locals_), {"closure": closure}, module
    return (code, globals_, locals_), {}, None


@callables.acts_for_program
def load_extension(load, /, *args, **kwargs):
    """The body of ``_imp.create_dynamic`` and ``_imp.exec_dynamic``
    (``load``): the same call, with the Python functions the compiled
    module fetches while it loads routed (``routing.begin_extension_load``),
    which its C code calls on behalf of the code that imported it."""
    target = args[0] if args else None
    routing.begin_extension_load(target)
    module = None
    try:
        result = load(*args, **kwargs)
        module = result if load is _create_dynamic else target
        return result
    except BaseException as exception:
        callables.drop_library_entries(exception)
        raise
    finally:
        routing.end_extension_load(module)


@callables.acts_for_program
def call_fetching(callee, /, *args, **kwargs):
    """The body of a C function that fetches the Python function it calls
    from a module at each call (``breakpoint``, ``sys.breakpointhook``'s
    default): the same call, with what it fetches routed
    (``routing.begin_fetching_call``)."""
    routing.begin_fetching_call()
    try:
        return callee(*args, **kwargs)
    except BaseException as exception:
        callables.drop_library_entries(exception)
        raise
    finally:
        routing.end_fetching_call()


def program_frame():
    """The frame of the program that called into cassette: the nearest one
    that is not cassette's own."""
    frame = _getframe(1)
    while frame is not None and callables.is_library_code(frame.f_code):
        frame = frame.f_back
    return frame


def _compiled_source(source, is_exec, frame):
    """``source`` compiled as ``exec``/``eval`` called from ``frame`` would
    compile it, or None when it is neither code nor source text."""
    if isinstance(source, _CodeType):
        return source
    if not isinstance(source, str):
        try:
            source = memoryview(source).tobytes()
        except TypeError:
            return None
    if not is_exec:
        source = source.lstrip(" \t" if isinstance(source, str) else b" \t")
    return compile(source, "<string>", "exec" if is_exec else "eval",
                   frame.f_code.co_flags & _FUTURE_FLAGS, True)


@callables.acts_for_program
def call_array_function(runtime, dispatcher, /, *args, **kwargs):
    """The body of numpy dispatcher ``dispatcher`` (``np.polyfit``): numpy's
    ``__array_function__`` protocol with its Python parts run overdubbed.
    The relevant-arguments function runs first; when no relevant argument's
    class overrides ``__array_function__`` (ndarray's own does not count,
    as in numpy), the implementation runs.  When one does, or when the
    relevant-arguments function rejects the arguments, the dispatcher runs
    as a primitive (``fallback``), so numpy itself calls the overrides or
    raises its own error."""
    try:
        relevant = callables.array_function_relevant(dispatcher)
        found = None
        if relevant is not None:
            try:
                found = runtime.rewritten(relevant)(*args, **kwargs)
                found = tuple(found)
            except TypeError:
                found = None
        return array_function_with(runtime, dispatcher, found, args, kwargs)
    except BaseException as exception:
        callables.drop_library_entries(exception)
        raise


def array_function_with(runtime, dispatcher, relevant, args, kwargs):
    """The rest of :func:`call_array_function` once the relevant arguments
    are known: ``relevant``, their tuple, or None when there is no
    relevant-arguments function or it rejected the arguments.  (The Cython
    core runs the common case itself — every relevant argument an ndarray
    or of a type in :data:`NO_ARRAY_FUNCTION` — and hands the rest here.)"""
    try:
        if relevant is not None and not _overrides_array_function(relevant):
            return runtime.rewritten(dispatcher._implementation)(*args, **(kwargs or {}))
        return dispatch.fallback(runtime.ctx, dispatcher, *args, **(kwargs or {}))
    except BaseException as exception:
        callables.drop_library_entries(exception)
        raise


def _overrides_array_function(relevant):
    """True when a class of ``relevant`` (values tagged by a running
    context seen as their primal values) defines an ``__array_function__``
    other than ndarray's."""
    numpy = _modules["numpy"]
    default = numpy.ndarray.__dict__["__array_function__"]
    tagged = dispatch.TAGGED
    for value in relevant:
        if tagged is not None:
            value = _untagged(value, tagged)
        kind = type(value)
        if kind is numpy.ndarray or kind in NO_ARRAY_FUNCTION:
            continue
        found = callables.lookup_on_type(kind, "__array_function__")
        if found is not None and found is not default:
            return True
    return False


#: Python's basic types: numpy never looks for __array_function__ on them.
NO_ARRAY_FUNCTION = frozenset({bool, int, float, complex, list, tuple, dict, set, frozenset,
                                bytes, str, type(None), slice, type(Ellipsis)})


def call_body(runtime, obj):
    """The body of calling ``obj`` (a callable instance, or a class whose
    metaclass defines ``__call__``): what :func:`callables.call_target` says
    the interpreter calls, run overdubbed — a staticmethod without ``obj``,
    a classmethod with ``type(obj)``, a function with ``obj`` first."""
    target, first = callables.call_target(obj)
    if first is callables.BIND_AT_CALL:
        return _partial(call_through_descriptor, runtime.call, obj, target)
    body = body_of(runtime, Decision(target, callables.NO_SELF, None,
                                     callables.body_kind(target)))
    return body if first is callables.NO_SELF else _MethodType(body, first)


@callables.acts_for_program
def call_through_descriptor(call, obj, descriptor, /, *args, **kwargs):
    """``obj(*args, **kwargs)`` where ``type(obj).__call__`` is a descriptor
    of a Python class: its ``__get__`` binds it to ``obj`` and what that
    returns is called, both as operations of the running context (``call``)."""
    try:
        get = callables.lookup_on_type(type(descriptor), "__get__")
        bound = call(get, descriptor, obj, type(obj))
        return call(bound, *args, **kwargs)
    except BaseException as exception:
        callables.drop_library_entries(exception)
        raise


_HEAPTYPE = callables.HEAPTYPE_FLAG
_ATTRIBUTE_HOOKS = {
    "getattr": ("__getattribute__", "__getattr__"),
    "setattr": ("__setattr__",),
    "delattr": ("__delattr__",),
}


def _is_python_code(found):
    """True for a class attribute the interpreter would run as Python code."""
    kind = type(found)
    if kind is staticmethod or kind is classmethod:
        found = found.__func__
        kind = type(found)
    return kind is _FunctionType or bool(callables.type_flags(kind) & _HEAPTYPE)


def _implements(tp, names):
    if not callables.type_flags(tp) & _HEAPTYPE:
        return False
    for name in names:
        found = callables.lookup_on_type(tp, name)
        if found is not None and _is_python_code(found):
            return True
    return False


def operation_has_body(name, args):
    """reference §3.3: True when the operation ``name`` (of :mod:`operations`)
    on ``args`` (as hooks see them) runs Python code of the program — an
    operand's class implements it in Python (``__add__`` or the other
    operand's ``__radd__`` …), or, for attribute access, the class
    customises it in Python or the attribute is a property or a descriptor
    of a Python class.  Such an operation recurses into that code; any
    other is a primitive."""
    if not args:
        return False
    tagged = dispatch.TAGGED
    if tagged is not None:
        # A tagged value's delegating special methods are not the program's
        # code: what its primal value's class does decides.
        args = tuple(_untagged(a, tagged) for a in args)
    hooks = _ATTRIBUTE_HOOKS.get(name)
    if hooks is not None:
        obj = args[0]
        tp = type(obj)
        if _implements(tp, hooks):
            return True
        attribute = args[1] if len(args) > 1 else None
        if type(attribute) is not str:
            return False
        found = callables.lookup_on_type(tp, attribute)
        if found is None and callables.is_class(obj):
            found = callables.lookup_on_type(obj, attribute)
        if found is None:
            return False
        kind = type(found)
        return kind is property or _implements(kind, callables.DESCRIPTOR_METHODS)
    first, second = OPERATIONS_SPECIAL_METHODS[name]
    return (_implements(type(args[0]), first)
            or (len(args) > 1 and _implements(type(args[1]), second)))


def tagged_method(runtime, obj, name):
    """For ``obj.name(…)`` where ``obj`` is a value tagged by ``runtime``'s
    context or an enclosing one: the method its primal value's class
    defines, resolved, to be called with ``obj`` itself first — so handlers
    see the tagged receiver and the fallback untags it.  None when ``obj``
    is not such a value or the attribute is not a plain method (the
    ordinary lookup then applies)."""
    tagged = dispatch.TAGGED
    tp = type(obj)
    if tagged is None or not issubclass(tp, tagged):
        return None
    owner = object.__getattribute__(obj, TAGGED_TAG_SLOT)
    chain = runtime
    while chain is not None and chain.ctx.tag is not owner:
        chain = chain.parent
    if chain is None:
        return None
    while issubclass(tp, tagged):
        tp = tp.primal_type
    descriptor = callables.lookup_on_type(tp, name)
    if descriptor is None or not (callables.is_method_descriptor(descriptor)
                                  or type(descriptor) is _FunctionType):
        return None
    return runtime.resolve(descriptor)


def _untagged(value, tagged):
    while issubclass(type(value), tagged):
        value = object.__getattribute__(value, TAGGED_VALUE_SLOT)
    return value


def native_with_error(manager):
    """Raise the interpreter's own error for a ``with`` on an object that is
    not a context manager."""
    with manager:
        pass
    raise AssertionError("unreachable")  # pragma: no cover


def native_async_with_error(manager):
    """Raise the interpreter's own error for an ``async with`` on an object
    that is not an asynchronous context manager."""
    async def probe():
        async with manager:
            pass
    coroutine = probe()
    try:
        coroutine.send(None)
    finally:
        coroutine.close()
    raise AssertionError("unreachable")  # pragma: no cover

