"""Contextual dispatch (reference §4): the generic hooks and the engine's fast path.

Generic hooks
-------------
:data:`prehook`, :data:`posthook`, :data:`execute` and :data:`fallback` are
:class:`GenericHook` instances.  Handler signatures::

    prehook(ctx, f, *args, **kwargs)            default: return None
    posthook(ctx, output, f, *args, **kwargs)   default: return None
    execute(ctx, f, *args, **kwargs)            default: return OverdubInstead
    fallback(ctx, f, *args, **kwargs)           default: f(*untagged args, **untagged kwargs)

``hook.register(ContextClass, callee=ANY, *argtypes)`` returns a decorator
that records a handler and returns the function unchanged.  Handlers are
found for ``(type(ctx), f, args)``:

* **Context class.**  A handler registered for class ``C`` applies to
  contexts whose type has ``C`` in its ``__mro__``.
* **Callee** matches by identity after :func:`canonical_callee` (bound
  methods map to their function, builtin bound methods to the descriptor on
  the class), so a handler registered for ``MyClass.m`` or ``list.append``
  matches calls through ``obj.m`` / ``lst.append``.  ``ANY`` matches every
  callee.  Note the converse: registering a bound method registers its
  function, for every instance.
* **Argtypes** (optional) match the positional arguments only; keywords never
  take part.  An argtype is a class (``isinstance``; a class of tagged
  values, ``cassette.Tagged`` or ``cassette.Tagged[T]``, matches only values
  tagged with respect to ``ctx``), ``ANY`` (= ``object``), an object
  implementing the argtype protocol (``_cassette_matches(value, ctx) -> bool``
  and ``_cassette_specificity() -> int``), or, as the last one only,
  ``Vararg(T)`` for zero or more further arguments each matching ``T``.
  Without ``Vararg`` the count of positional arguments must equal the
  number of argtypes.
* **Specificity**, most significant first: a specific callee beats ``ANY``;
  then the more derived context class (earlier in ``type(ctx).__mro__``);
  then a handler with argtypes beats one without; then, among handlers with
  argtypes, a *narrower* one beats a wider one; remaining ties (equal or
  incomparable argtypes) go to the most recent registration.

  Narrowness, for a call with ``n`` positional arguments: both handlers' specs
  are expanded to ``n`` positions (``Vararg(T)`` repeats ``T``).  ``h1`` is at
  least as narrow as ``h2`` when every position of ``h1`` is: a subclass of
  ``h2``'s class; anything when ``h2``'s is ``object``; a protocol object of
  ``_cassette_specificity()`` >= that of ``h2``'s protocol object.  (A class
  and a protocol object are otherwise incomparable.)  ``h1`` is narrower when
  it is at least as narrow and ``h2`` is not, or both are (equal positions) and
  ``h1`` has more fixed positions, or no ``Vararg`` where ``h2`` has one —
  so ``(float, float)`` beats ``(float, Vararg(float))``.
* **Class-body hooks.**  A method named ``prehook``/``posthook``/``execute``/
  ``fallback`` in a context class body counts as ``register(ThatClass, ANY)``;
  the context metaclass reports such methods through
  :func:`define_class_hook`, at class creation and whenever the attribute is
  set or deleted (each report is a fresh registration, i.e. most recent).
  ``unregister`` does not touch class-body hooks (delete the attribute).

Calling ``hook(ctx, f, *args, **kwargs)`` runs the most specific matching
handler, or the default when none matches.  Exceptions raised by handlers
propagate unchanged.

Fast path for the engine
------------------------
* :func:`generation` is an int that increases on every change that may alter
  a dispatch decision (``register``, ``unregister``, class-hook changes,
  :func:`invalidate`).  Anything cached from this module is valid while the
  generation is unchanged.
* :func:`plan` ``(ctx_type, callee) -> Plan`` (callee already canonical) is
  cached per (context class, callee identity) and generation: repeated calls
  return the same object.  ``Plan.prehook`` … ``Plan.fallback`` are ``None``
  when no handler of that kind can ever match that callee for that context
  class (skip it / use the default), else a :class:`Selector`.  A plan with
  all four ``None`` is the shared :attr:`Plan.empty`.
* :class:`Selector`: ``unconditional`` is the handler that always wins (the
  most specific candidate has no argtypes) or ``None``; ``select(ctx, args)``
  returns the winning handler for these positional args, or ``None`` (use the
  default).  Results are cached per tuple of argument types when every
  argtype is an ordinary class (argtypes whose metaclass customises
  ``__instancecheck__`` other than ``abc.ABCMeta``, and protocol objects,
  disable that cache; ABC virtual-subclass registration is tracked).
* :func:`could_match` and :func:`has_any_handler` answer rewrite-time
  questions per context class.

Thread-safety: registrations are serialised by a lock and publish new,
immutable structures; lookups take no lock.  A registration made while
another thread is dispatching takes effect at that thread's next operation.
"""

from __future__ import annotations

import abc
import itertools
import types
from operator import attrgetter
from typing import Any, Callable, TypeVar

from . import callables, lifetimes, locks
from ._singletons import ANY, OverdubInstead
from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_ABCMeta = abc.ABCMeta
_get_cache_token = abc.get_cache_token

__all__ = [
    "ANY", "Vararg", "GenericHook", "prehook", "posthook", "execute", "fallback",
    "canonical_callee", "define_class_hook", "generation", "invalidate",
    "plan", "Plan", "Selector", "could_match", "has_any_handler",
]

HOOK_NAMES = ("prehook", "execute", "posthook", "fallback")

_lock = locks.lock()
_serials = itertools.count(1)
_generation = 0

# Caches valid for the current generation; replaced (never mutated in place
# across generations) by _bump so that a computation racing with a
# registration can only write into a dictionary nobody reads any more.
_plan_cache = {}        # ctx_type -> {id(callee): (callee, Plan)}
_summary_cache = {}     # ctx_type -> _Summary
_PLAN_CACHE_MAX = 1 << 14   # per context class, and context classes
_SELECT_CACHE_MAX = 1 << 10


def generation():
    """The dispatch generation (an int; increases on every relevant change)."""
    return _generation


class HeldSelections:
    """The selections cached by argument types whose key holds classes of
    the program that their modules reach (``cassette.lifetimes``): when a
    collection starts, a selection one of whose classes its module dropped
    is forgotten, and so are the copies the Cython core's operation sites
    and protocols keep (``listeners`` are called)."""

    def __init__(self):
        self.young, self.old = [], []   # (cache, key, classes, generation)
        self.listeners = []

    def note(self, cache, key, classes):
        if len(self.young) + len(self.old) >= 4 * _SELECT_CACHE_MAX:
            self.young = [noted for noted in self.young if self._kept(noted)]
            self.old = [noted for noted in self.old if self._kept(noted)]
        self.young.append((cache, key, classes, _generation))
        lifetimes.note_module_holder(self)

    @staticmethod
    def _kept(noted):
        # (A selector of an older generation is no longer asked.)
        return noted[3] == _generation and noted[1] in noted[0]

    def forget_dynamic(self, everything):
        """Ask again about the selections noted since the last collection
        (``everything``: about all of them); held for good."""
        asked, self.young = self.young, []
        if everything:
            asked.extend(self.old)
            self.old = []
        forgot = False
        for noted in asked:
            if not self._kept(noted):
                continue
            if all(callables.lives_with_its_module(cls) for cls in noted[2]):
                self.old.append(noted)
            else:
                noted[0].pop(noted[1], None)
                forgot = True
        if forgot:
            for listener in self.listeners:
                listener()
        return True


held_selections = HeldSelections()


_generation_listeners = []


def on_generation_change(listener):
    """Call ``listener(new_generation)`` after every bump (the Cython core
    keeps a C copy of the generation this way)."""
    _generation_listeners.append(listener)
    listener(_generation)


def _bump():
    global _generation, _plan_cache, _summary_cache
    with _lock:
        _plan_cache = {}
        _summary_cache = {}
        callables.forget_descriptors()
        _generation += 1
        for listener in _generation_listeners:
            listener(_generation)


def invalidate():
    """Bump the generation, dropping every cached plan and summary.

    Called by the context metaclass when a class's ``intercept`` changes, and
    available to any code that changes something dispatch results depend on
    (for example a class's ``__bases__``).
    """
    _bump()


# ---------------------------------------------------------------------------
# Callee canonicalisation

_FunctionType = types.FunctionType
_MethodType = types.MethodType
_BuiltinMethodType = types.BuiltinMethodType            # builtin_function_or_method
_MethodWrapperType = types.MethodWrapperType            # e.g. (1).__add__
_ModuleType = types.ModuleType
def canonical_callee(f):
    """Normalise a callee for identity matching: what hooks see for a call
    of ``f`` (:func:`cassette.callables.split_bound`), and for a
    ``classmethod``/``staticmethod`` object its ``__func__``."""
    if isinstance(f, (classmethod, staticmethod)):
        return f.__func__
    return callables.split_bound(f)[0]


# ---------------------------------------------------------------------------
# Argtypes

#: A handler (a function taking the context first), as ``register`` returns it.
_HandlerFunction = TypeVar("_HandlerFunction", bound=Callable[..., Any])


class Vararg:
    """``Vararg(T)``: zero or more further positional arguments, each matching ``T``.

    Only valid as the last argtype of a registration.  ``T`` is a class, ``ANY``
    or an argtype protocol object.
    """

    __slots__ = ("type",)

    type: Any

    def __init__(self, T: Any) -> None:
        object.__setattr__(self, "type", _check_argtype(T, "Vararg(T)"))

    def __setattr__(self, name, value):
        raise AttributeError("Vararg is immutable")

    def __repr__(self):
        t = self.type
        return f"cassette.Vararg({t.__qualname__ if isinstance(t, type) else repr(t)})"

    def __eq__(self, other):
        return type(other) is Vararg and other.type is self.type

    def __hash__(self):
        return hash((Vararg, id(self.type)))

    def __reduce__(self):
        return (Vararg, (self.type,))


def _is_protocol(t):
    return (callable(getattr(t, "_cassette_matches", None))
            and callable(getattr(t, "_cassette_specificity", None)))


def _check_argtype(t, where):
    if t is ANY:
        return object
    if isinstance(t, type):
        return t
    if _is_protocol(t):
        return t
    if isinstance(t, Vararg):
        raise TypeError(f"{where}: Vararg(T) may only be the last argtype")
    raise TypeError(
        f"{where}: an argtype must be a class, cassette.ANY, an argtype protocol object "
        f"(such as cassette.Tagged[T]) or cassette.Vararg(T) as the last one; got {t!r}")


_TYPE_INSTANCECHECK = type.__instancecheck__
_ABC_INSTANCECHECK = abc.ABCMeta.__instancecheck__


def _type_cacheable(t):
    """Whether isinstance(x, t) depends only on type(x) (modulo ABC registration)."""
    if not isinstance(t, type):
        return False
    check = getattr(type(t), "__instancecheck__", _TYPE_INSTANCECHECK)
    return check is _TYPE_INSTANCECHECK or check is _ABC_INSTANCECHECK


def _at_least_as_narrow(a, b):
    if a is b or b is object:
        return True
    a_cls = isinstance(a, type)
    b_cls = isinstance(b, type)
    if a_cls and b_cls:
        try:
            return issubclass(a, b)
        except TypeError:
            return False
    if not a_cls and not b_cls:
        return a._cassette_specificity() >= b._cassette_specificity()
    return False


def _matches(t, value, ctx):
    """Whether ``value`` matches argtype ``t``.  A class of tagged values
    (``cassette.Tagged``, ``cassette.Tagged[T]``) matches only values tagged
    with respect to ``ctx`` (reference §4)."""
    if isinstance(t, type):
        if not isinstance(value, t):
            return False
        return TAGGED is None or not issubclass(t, TAGGED) or own_mask(ctx, (value,)) == 1
    return t._cassette_matches(value, ctx)


# ---------------------------------------------------------------------------
# Handlers and the registry

class _Handler:
    __slots__ = ("kind", "ctx_class", "callee", "argtypes", "fixed", "vararg",
                 "func", "registered", "does_nothing", "serial", "classbody")

    def __init__(self, kind, ctx_class, callee, argtypes, fixed, vararg, func, classbody):
        self.kind = kind
        self.ctx_class = ctx_class
        self.callee = callee
        self.argtypes = argtypes      # as given (normalised), for introspection
        self.fixed = fixed            # tuple of argtypes before a Vararg
        self.vararg = vararg          # element argtype of a trailing Vararg, or None
        self.registered = func        # as the user gave it
        # A prehook/posthook with an empty body, called with any arguments,
        # has no effect (its result is ignored): see _unless_it_does_nothing.
        self.does_nothing = not argtypes and callables.does_nothing(
            func, 3 if kind == "posthook" else 2)
        self.func = callables.with_positional_parameters(   # how it is called
            func, 3 if kind == "posthook" else 2)
        self.serial = next(_serials)
        self.classbody = classbody

    def matches(self, ctx, args):
        fixed = self.fixed
        n = len(fixed)
        vararg = self.vararg
        if vararg is None:
            if len(args) != n:
                return False
        elif len(args) < n:
            return False
        for t, a in zip(fixed, args):
            if not _matches(t, a, ctx):
                return False
        if vararg is not None and vararg is not object:
            for a in args[n:]:
                if not _matches(vararg, a, ctx):
                    return False
        return True

    def position(self, i):
        fixed = self.fixed
        return fixed[i] if i < len(fixed) else self.vararg

    def lenkey(self):
        return (len(self.fixed), self.vararg is None)

    def __repr__(self):
        callee = getattr(self.callee, "__qualname__", self.callee)
        return (f"<{self.kind} handler {getattr(self.func, '__qualname__', self.func)} for "
                f"{self.ctx_class.__qualname__}, {callee}, {self.argtypes!r}>")


def _strictly_narrower(h1, h2, n):
    """Whether h1 beats h2 on narrowness for a call with n positional args."""
    le12 = le21 = True
    for i in range(n):
        a = h1.position(i)
        b = h2.position(i)
        if le12 and not _at_least_as_narrow(a, b):
            le12 = False
        if le21 and not _at_least_as_narrow(b, a):
            le21 = False
        if not le12:
            return False
    if not le21:
        return True
    return h1.lenkey() > h2.lenkey()


def _check_context_class(cls, where):
    if isinstance(cls, type) and getattr(cls, "_cassette_context_class", False) is True:
        return
    if getattr(type(cls), "_cassette_context_class", False) is True:
        raise TypeError(
            f"{where}: expected a context class, got an instance of "
            f"{type(cls).__qualname__}; pass the class (type(ctx)) instead")
    raise TypeError(f"{where}: expected a cassette.Context subclass, got {cls!r}")


_MISS = object()


class Selector:
    """Chooses among the handlers of one kind for one (context class, callee).

    Attributes:

    ``unconditional``
        The handler function that wins whatever the arguments (the most
        specific candidate has no argtypes), or ``None``.
    ``select(ctx, args)``
        The most specific handler function whose argtypes match the positional
        ``args`` (a tuple), or ``None`` when none does (the caller then uses
        the default behaviour).  ``ctx`` is only passed to argtype protocol
        objects.  Results are cached per tuple of argument types when that is
        sound (see the module docstring).
    ``by_types``
        When the choice depends on the argument types alone (no argtype is
        an ABC or a protocol object): the cache ``select`` fills, a dict from
        a key to the handler (or ``None``), which a runtime may read before
        calling ``select``.  Otherwise ``None``.  The key is
        :func:`selection_key`'s.
    ``candidates``
        Every handler considered, most specific first (for introspection).
    """

    __slots__ = ("unconditional", "select", "candidates", "by_types", "_tiers", "_default",
                 "_cache")

    def __init__(self, tiers, default, candidates):
        # tiers: handler tuples with argtypes, most significant tier first,
        #   each sorted by serial, newest first; all rank above `default`.
        # default: the function of the best handler without argtypes, or None.
        self._tiers = tiers
        self._default = default
        self.unconditional = default if not tiers else None
        self.candidates = candidates
        self._cache = {}
        self.by_types = None
        if self.unconditional is not None:
            self.select = self._select_unconditional
            return
        cacheable = True
        uses_abc = False
        for tier in tiers:
            for h in tier:
                specs = h.fixed if h.vararg is None else h.fixed + (h.vararg,)
                for t in specs:
                    if not _type_cacheable(t):
                        cacheable = False
                    elif isinstance(t, _ABCMeta):
                        uses_abc = True
        if not cacheable:
            self.select = self._compute
        else:
            self.select = self._make_cached_select(uses_abc)
            if not uses_abc:
                self.by_types = self._cache

    def _select_unconditional(self, ctx, args):
        return self.unconditional

    def _make_cached_select(self, uses_abc):
        cache = self._cache
        get = cache.get
        compute = self._compute
        miss = _MISS

        def store(ctx, args, key):
            found = compute(ctx, args)
            for a in args:
                # Proxies: isinstance may disagree with type.  A tagged value
                # reports its primal value's class, which its type fixes.
                if a.__class__ is not type(a) and not (TAGGED is not None
                                                       and issubclass(type(a), TAGGED)):
                    return found
            droppable = ()
            for t in key:
                # A class the program can drop is never a key: the cache
                # would keep it alive (cassette.lifetimes).
                if callables.is_class(t) and not callables.class_lives_with_its_module(t):
                    return found
                if callables.is_class(t) and callables.dies_by_collection(t):
                    droppable += (t,)
            if len(cache) >= _SELECT_CACHE_MAX:
                cache.clear()
            cache[key] = found
            if droppable:
                held_selections.note(cache, key, droppable)
            return found

        if not uses_abc:
            def select(ctx, args):
                n = len(args)
                if n == 1:
                    key = (type(args[0]),)
                elif n == 2:
                    key = (type(args[0]), type(args[1]))
                elif n == 0:
                    key = ()
                elif n == 3:
                    key = (type(args[0]), type(args[1]), type(args[2]))
                else:
                    key = tuple(map(type, args))
                key = selection_key(ctx, args, key)
                found = get(key, miss)
                if found is not miss:
                    return found
                return store(ctx, args, key)
        else:
            token = [_get_cache_token()]
            get_cache_token = _get_cache_token

            def select(ctx, args):
                current = get_cache_token()
                if current != token[0]:          # an ABC registered a virtual subclass
                    cache.clear()
                    token[0] = current
                key = selection_key(ctx, args, tuple(map(type, args)))
                found = get(key, miss)
                if found is not miss:
                    return found
                return store(ctx, args, key)
        return select

    def _compute(self, ctx, args):
        n = len(args)
        for tier in self._tiers:
            matching = [h for h in tier if h.matches(ctx, args)]
            if not matching:
                continue
            if len(matching) == 1:
                return matching[0].func
            # Handlers not beaten on narrowness by another match; newest of those
            # (`matching` is newest first).
            for h in matching:
                if not any(o is not h and _strictly_narrower(o, h, n) for o in matching):
                    return h.func
        return self._default

    def __repr__(self):
        return f"<Selector unconditional={self.unconditional!r} candidates={len(self.candidates)}>"


class Plan:
    """What can run for one (context class, callee): a :class:`Selector` or
    ``None`` per hook kind (``None``: no handler can match; use the default)."""

    __slots__ = ("prehook", "execute", "posthook", "fallback", "compiled")

    def __init__(self, prehook=None, execute=None, posthook=None, fallback=None):
        self.prehook = prehook
        self.execute = execute
        self.posthook = posthook
        self.fallback = fallback
        #: What the Cython core compiled the plan to (its ``Protocol``), made
        #: once per plan: a plan does not change (a new generation makes new
        #: plans).  None until then.
        self.compiled = None

    @property
    def watching(self):
        """Whether the plan only watches: no ``execute`` or ``fallback``
        handler can run, and each hook that exists is for any arguments
        (its selector's ``unconditional``) — a tracer's or a profiler's
        shape.  The operation then always runs as it would unhooked, with
        the hooks around it, and a runtime may run it without selecting
        anything (the core's ``Protocol.run_vector``)."""
        return (self.execute is None and self.fallback is None
                and all(hook is None or hook.unconditional is not None
                        for hook in (self.prehook, self.posthook)))

    def __repr__(self):
        if self is Plan.empty:
            return "<Plan empty>"
        parts = ", ".join(f"{k}={getattr(self, k)!r}" for k in HOOK_NAMES
                          if getattr(self, k) is not None)
        return f"<Plan {parts}>"


Plan.empty = Plan()


class _Summary:
    __slots__ = ("any_handler", "any_callee", "callees")

    def __init__(self, any_handler, any_callee, callees):
        self.any_handler = any_handler      # some handler at all
        self.any_callee = any_callee        # some handler registered for ANY
        self.callees = callees              # id(callee) -> callee, specific callees


class GenericHook:
    """A generic hook function dispatching on (context, callee, argument types).

    See the module docstring for registration and specificity rules.
    """

    def __init__(self, name: str, default: Callable[..., Any]) -> None:
        self.name = name
        self.default = default
        # Whether a handler that does nothing may be skipped (its result is
        # ignored): true of prehooks and posthooks only.
        self.elidable = name in ("prehook", "posthook")
        self.__name__ = name
        self.__qualname__ = name
        self.__doc__ = default.__doc__
        self._table = {}    # ctx_class -> {id(callee) or ANY: tuple of _Handler}
        self._get_selector = attrgetter(name)

    def __repr__(self):
        return f"<cassette.{self.name} generic hook>"

    def __reduce__(self):
        return self.name

    # -- registration -------------------------------------------------------

    def register(self, ctx_class: type, callee: Any = ANY,
                 *argtypes: Any) -> Callable[[_HandlerFunction], _HandlerFunction]:
        """``register(ContextClass, callee=ANY, *argtypes)`` -> decorator.

        The decorator records its function as a handler and returns it
        unchanged.  Raises ``TypeError`` at once for a non-context class, a
        non-callable callee or a malformed argtype.
        """
        where = f"cassette.{self.name}.register"
        _check_context_class(ctx_class, where)
        if callee is not ANY:
            callee = canonical_callee(callee)
            if not callable(callee):
                raise TypeError(f"{where}: callee must be callable or cassette.ANY, got {callee!r}")
        normal = []
        vararg = None
        for i, t in enumerate(argtypes):
            if isinstance(t, Vararg):
                if i != len(argtypes) - 1:
                    raise TypeError(f"{where}: Vararg(T) may only be the last argtype "
                                    f"(found at position {i} of {len(argtypes)})")
                vararg = t.type
                normal.append(t)
            else:
                normal.append(_check_argtype(t, f"{where} (argtype {i})"))
        fixed = tuple(normal[:-1]) if vararg is not None else tuple(normal)
        argtypes = tuple(normal)

        def decorator(func):
            if not callable(func):
                raise TypeError(f"{where}(...) must decorate a callable, got {func!r}")
            self._add(_Handler(self.name, ctx_class, callee, argtypes, fixed, vararg, func, False))
            return func

        return decorator

    def _add(self, handler):
        with _lock:
            key = ANY if handler.callee is ANY else id(handler.callee)
            table = self._table.get(handler.ctx_class, {})
            table = dict(table)
            table[key] = table.get(key, ()) + (handler,)
            self._table[handler.ctx_class] = table
            _bump()

    def _remove_where(self, pred):
        removed = 0
        for ctx_class, table in list(self._table.items()):
            new = {}
            for key, handlers in table.items():
                kept = tuple(h for h in handlers if not pred(h))
                removed += len(handlers) - len(kept)
                if kept:
                    new[key] = kept
            if new:
                self._table[ctx_class] = new
            else:
                del self._table[ctx_class]
        return removed

    def unregister(self, func: Callable[..., Any]) -> None:
        """Remove every ``register``-ed handler of this hook that is ``func``.

        Raises ``ValueError`` if there is none.  Class-body hooks are not
        affected: delete the class attribute to remove one.
        """
        with _lock:
            removed = self._remove_where(lambda h: h.registered is func and not h.classbody)
            if removed:
                _bump()
                return
        raise ValueError(f"cassette.{self.name}.unregister: {func!r} is not registered")

    def _define_class_hook(self, cls, func):
        with _lock:
            self._remove_where(lambda h: h.classbody and h.ctx_class is cls)
            if func is not None:
                self._add(_Handler(self.name, cls, ANY, (), (), None, func, True))
            else:
                _bump()

    def registrations(self) -> list[tuple[type, Any, tuple[Any, ...], Callable[..., Any]]]:
        """Every handler of this hook as ``(ctx_class, callee, argtypes, func)``,
        oldest first (class-body hooks included)."""
        with _lock:
            hs = [h for table in self._table.values() for t in table.values() for h in t]
        hs.sort(key=attrgetter("serial"))
        return [(h.ctx_class, h.callee, h.argtypes, h.registered) for h in hs]

    # -- lookup ---------------------------------------------------------------

    def _selector(self, ctx_type, callee):
        cands = []
        key = id(callee)
        for i, cls in enumerate(ctx_type.__mro__):
            table = self._table.get(cls)
            if table is None:
                continue
            for h in table.get(key, ()):
                if h.callee is callee:
                    cands.append(((1, -i, bool(h.argtypes), h.serial), h))
            for h in table.get(ANY, ()):
                cands.append(((0, -i, bool(h.argtypes), h.serial), h))
        if not cands:
            return None
        cands.sort(key=lambda c: c[0], reverse=True)
        tiers = []
        current = None
        current_key = None
        default = None
        for k, h in cands:
            if not k[2]:
                default = h.func
                break
            if k[:3] != current_key:
                current_key = k[:3]
                current = []
                tiers.append(current)
            current.append(h)
        return Selector(tuple(tuple(t) for t in tiers), default, tuple(h for _, h in cands))

    def __call__(self, ctx: Any, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        ctx_type = type(ctx)
        if not getattr(ctx_type, "_cassette_context_class", False):
            raise TypeError(f"cassette.{self.name}: the first argument must be a "
                            f"cassette.Context instance, got {ctx!r}")
        sel = self._get_selector(plan(ctx_type, canonical_callee(f)))
        if sel is not None:
            func = sel.unconditional
            if func is None:
                func = sel.select(ctx, args)
            if func is not None:
                return func(ctx, f, *args, **kwargs)
        return self.default(ctx, f, *args, **kwargs)


class _PosthookGenericHook(GenericHook):
    """The posthook generic: handlers take ``(ctx, output, f, *args, **kwargs)``."""

    def __call__(self, ctx: Any, output: Any, f: Callable[..., Any],  # type: ignore[override]
                 /, *args: Any, **kwargs: Any) -> Any:
        ctx_type = type(ctx)
        if not getattr(ctx_type, "_cassette_context_class", False):
            raise TypeError(f"cassette.{self.name}: the first argument must be a "
                            f"cassette.Context instance, got {ctx!r}")
        sel = self._get_selector(plan(ctx_type, canonical_callee(f)))
        if sel is not None:
            func = sel.unconditional
            if func is None:
                func = sel.select(ctx, args)
            if func is not None:
                return func(ctx, output, f, *args, **kwargs)
        return self.default(ctx, output, f, *args, **kwargs)


# ---------------------------------------------------------------------------
# Defaults

#: Functions that see their arguments' tags even when a context with tagging
#: runs them as primitives: the tagging API, which must see every context's
#: tags (reference §6: in nested use, outer tags pass through the inner API).
SEES_TAGS = set()

#: The base class of tagged values (``cassette.Tagged``) once the tagging
#: layer is loaded: the engine looks through such wrappers (their special
#: methods only delegate) when it decides whether an operation has a body.
TAGGED = None


def own_mask(ctx, args):
    """An int whose bit ``i`` is set when ``args[i]`` is tagged with respect
    to ``ctx`` (its outermost tag is ``ctx``'s).  0 until the tagging layer
    is installed (:func:`install_tagging`)."""
    return 0


def selection_key(ctx, args, types):
    """The key of a selector's cache (:attr:`Selector.by_types`) for the
    positional ``args`` of types ``types``: ``types`` itself, until the
    tagging layer is installed (:func:`install_tagging`).  With it, each
    argument tagged with respect to ``ctx`` is keyed by the type of the
    value it wraps, and the key ends with :func:`own_mask` when that is not
    0: a tagged value's own type is made per tag, and every call of a tool
    (a derivative) makes a tag, while what a handler's argtypes match is
    the same for each (``cassette.Tagged`` argtypes match only the running
    context's tagged values, whatever their tag)."""
    return types


def _untag_arguments(ctx, args, kwargs):
    """Return ``(args, kwargs)`` with every tagged value replaced by its primal.

    Unchanged until the tagging layer is installed (:func:`install_tagging`);
    the default fallback looks it up at each call.
    """
    return args, kwargs


def _default_prehook(ctx, f, /, *args, **kwargs):
    """Run before each operation ``f(*args, **kwargs)``.  Default: nothing."""
    return None


def _default_posthook(ctx, output, f, /, *args, **kwargs):
    """Run after each operation that returned ``output``.  Default: nothing."""
    return None


def _default_execute(ctx, f, /, *args, **kwargs):
    """Replace an operation: return its result, or ``OverdubInstead`` to run it
    (its body overdubbed, or ``fallback``).  Default: ``OverdubInstead``."""
    return OverdubInstead


def tagging_fallback(ctx, callee, primitive, args, kwargs):
    """The default fallback for a context with tagging: run ``callee`` (by
    calling ``primitive``) so that metadata propagates (reference §6).

    Until the propagation layer is installed (:func:`install_propagation`):
    calls ``primitive`` with untagged arguments."""
    args, kwargs = _untag_arguments(ctx, args, kwargs)
    return primitive(*args, **kwargs)


def tagging_propagator(callee):
    """The propagation layer's implementation of primitive ``callee``
    (``propagate(ctx, primitive, args, kwargs)``), or None when untagging
    its arguments is all it needs (always, until that layer is installed)."""
    return None


def record_parts(ctx, sequence, parts):
    """Record ``parts`` — per element of list ``sequence``, ``(value,
    metadata)`` or None — in ``ctx``'s bindings cache: the runtime calls it
    for a list without a record that it built or wrote a tagged value
    into.  Nothing is recorded until the propagation layer is installed."""
    return None


#: Slots of code rewritten for a tagging context (``cassette.propagation``
#: provides them): slot name -> ``make(ctx, outer)`` giving the callable
#: bound for a runtime of ``ctx`` (``outer``: the enclosing runtime's, or None).
TAGGING_SLOTS = {}


def install_tagging(*, tagged, own_mask, selection_key, untag_arguments, sees_tags):
    """Plug the tagging layer (``cassette.tagging``, which builds on this
    module) into dispatch: the base class of tagged values, the functions
    above that depend on tags, and the functions that see their arguments'
    tags (:data:`SEES_TAGS`).  Called once, when that layer is imported."""
    global TAGGED, _untag_arguments
    TAGGED = tagged
    _untag_arguments = untag_arguments
    globals()["own_mask"] = own_mask
    globals()["selection_key"] = selection_key
    SEES_TAGS.update(sees_tags)


def install_propagation(*, fallback, propagator, slots, record_parts):
    """Plug the propagation layer (``cassette.propagation``) into dispatch:
    the default fallback of a tagging context, the propagators of
    primitives, the tagging slots and the recording of a list's parts.
    Called once, when that layer is imported."""
    global tagging_fallback, tagging_propagator, TAGGING_SLOTS
    tagging_fallback = fallback
    tagging_propagator = propagator
    TAGGING_SLOTS = slots
    globals()["record_parts"] = record_parts


def _default_fallback(ctx, f, /, *args, **kwargs):
    """Run a primitive: default ``f(*args, **kwargs)`` with arguments untagged
    (under tagging, metadata propagates through it: reference §6)."""
    if getattr(ctx, "tag", None) is not None:
        return tagging_fallback(ctx, f, f, args, kwargs)
    args, kwargs = _untag_arguments(ctx, args, kwargs)
    return f(*args, **kwargs)


prehook = GenericHook("prehook", _default_prehook)
posthook = _PosthookGenericHook("posthook", _default_posthook)
execute = GenericHook("execute", _default_execute)
fallback = GenericHook("fallback", _default_fallback)

_HOOKS = {"prehook": prehook, "posthook": posthook, "execute": execute, "fallback": fallback}


def define_class_hook(cls, name, func):
    """Record (``func``) or remove (``None``) the class-body hook ``name`` of ``cls``.

    ``func`` has the handler signature of that hook (``(ctx, f, *args,
    **kwargs)``; posthook: ``(ctx, output, f, *args, **kwargs)``).  Any
    previous class-body hook of that name for ``cls`` is replaced; the new one
    gets a fresh serial (it is the most recent registration).  Bumps the
    generation.  Called by the context metaclass; never with the base
    ``Context``'s own default methods.
    """
    hook = _HOOKS.get(name)
    if hook is None:
        raise ValueError(f"define_class_hook: {name!r} is not one of {', '.join(HOOK_NAMES)}")
    _check_context_class(cls, "define_class_hook")
    if func is not None and not callable(func):
        raise TypeError(f"{cls.__qualname__}.{name} must be callable, got {func!r}")
    hook._define_class_hook(cls, func)


# ---------------------------------------------------------------------------
# Fast path

def _unless_it_does_nothing(selector, fixed):
    """``selector``, or None when the handler that always wins provably does
    nothing: like Cassette.jl, whose compiler inlines an empty hook away,
    cassette never calls it (and need not rewrite sites only it could see)."""
    if selector is not None and selector.unconditional is not None:
        if callables.does_nothing(selector.unconditional, fixed):
            return None
    return selector


def plan(ctx_type, callee):
    """The :class:`Plan` for ``(ctx_type, callee)``; ``callee`` already canonical.

    Cached until the generation changes: repeated calls return the same
    object.  Callees no handler names share one plan per context class (and
    are not kept alive by the cache); the others are cached per callee
    identity.  Works for unhashable callees.
    """
    try:
        entry = _plan_cache[ctx_type][id(callee)]
    except KeyError:
        return _compute_plan(ctx_type, callee)
    if entry[0] is callee:
        return entry[1]
    return _compute_plan(ctx_type, callee)


def _compute_plan(ctx_type, callee):
    cache = _plan_cache         # captured before reading the registry
    if _summary(ctx_type).callees.get(id(callee)) is not callee:
        # No handler names this callee: it gets the plan every such callee
        # shares (the ANY handlers'), cached once per class.  Caching it per
        # callee would keep short-lived callees (closures, their cells, the
        # objects those hold) alive.
        per_class = cache.get(ctx_type)
        entry = per_class.get(ANY) if per_class is not None else None
        if entry is not None:
            return entry[1]
        callee = ANY
    p = Plan(_unless_it_does_nothing(prehook._selector(ctx_type, callee), 2),
             execute._selector(ctx_type, callee),
             _unless_it_does_nothing(posthook._selector(ctx_type, callee), 3),
             fallback._selector(ctx_type, callee))
    if p.prehook is None and p.execute is None and p.posthook is None and p.fallback is None:
        p = Plan.empty
    per_class = cache.get(ctx_type)
    if per_class is None:
        if len(cache) >= _PLAN_CACHE_MAX:
            cache.clear()
        per_class = cache[ctx_type] = {}
    elif len(per_class) >= _PLAN_CACHE_MAX:
        per_class.clear()
    # The entry keeps `callee` alive, so its id cannot be reused meanwhile.
    per_class[ANY if callee is ANY else id(callee)] = (callee, p)
    return p


def _summary(ctx_type):
    s = _summary_cache.get(ctx_type)
    if s is not None:
        return s
    cache = _summary_cache
    any_handler = any_callee = False
    callees = {}
    for hook in _HOOKS.values():
        for cls in ctx_type.__mro__:
            table = hook._table.get(cls)
            if not table:
                continue
            for key, handlers in table.items():
                if hook.elidable and all(h.does_nothing for h in handlers):
                    continue
                any_handler = True
                if key is ANY:
                    any_callee = True
                else:
                    callees[key] = handlers[0].callee
    s = _Summary(any_handler, any_callee, callees)
    cache[ctx_type] = s
    return s


def could_match(ctx_type, callees):
    """True if a handler of any kind registered for ``ctx_type`` or a base
    could match one of ``callees`` (canonicalised here).  An ``ANY`` handler
    matches everything.  Cached per context class and generation."""
    s = _summary(ctx_type)
    if s.any_callee:
        return True
    if not s.callees:
        return False
    known = s.callees
    for c in callees:
        c = canonical_callee(c)
        if known.get(id(c)) is c:
            return True
    return False


def named_callees(ctx_type):
    """The callees that handlers registered for ``ctx_type`` or a base name
    (every kind but those that do nothing): ``{id(callee): callee}``, cached
    per context class and generation; not to be modified."""
    return _summary(ctx_type).callees


def has_any_handler(ctx_type):
    """True if any handler (of any kind, class-body hooks included) is
    registered for ``ctx_type`` or one of its bases."""
    return _summary(ctx_type).any_handler
