"""The pure-Python runtime: the trampoline that rewritten code calls.

Selected with ``CASSETTE_PURE_PYTHON=1``; otherwise the Cython core
(``_core.pyx``) implements the same classes with the same behaviour.  All
decisions come from :mod:`cassette.engine`; this module only carries them
out.  One :class:`Runtime` serves one context instance (and, for a nested
overdub, one enclosing runtime).
"""

import functools
import operator
import sys
import types
import weakref
from _thread import get_ident as _get_ident

from . import callables, dispatch, engine, lifetimes, routing
from ._singletons import OverdubInstead
from .operations import ARRANGED_SITES, OPERATIONS, STRUCTURAL_SLOTS
from .markers import EXHAUSTED
from .rewrite import recursion_limit_lock
from .versions import LAYER
# Bound at import, while this module's frames keep the program's builtins
# (see cassette/_builtins.py).
from ._builtins import (AttributeError, BaseException, StopIteration, any, bool, callable,
    dir, getattr, globals, hasattr, id, isinstance, len, locals, next, object, slice, sorted, str,
    tuple, type, vars)

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_partial = functools.partial
_ref = weakref.ref
_ReferenceType = weakref.ReferenceType

_FunctionType = types.FunctionType
_MethodType = types.MethodType
_BuiltinMethodType = types.BuiltinMethodType
_MethodWrapperType = types.MethodWrapperType
_NO_SELF = callables.NO_SELF
_drop_library_entries = callables.drop_library_entries
_lookup = callables.lookup_on_type
_remove_library_entries = callables.remove_library_entries
_generation = dispatch.generation
_EMPTY = dispatch.Plan.empty

CACHE_MAX = engine.RESOLUTION_CACHE_MAX
GIVEN_ITERATORS_KEPT = engine.GIVEN_ITERATORS_KEPT

# In Runtime._recipes: one function of the code was seen; no recipe (when
# the partials' recipe does not apply).
_SEEN_ONCE = "seen once"
_NO_RECIPE = "no recipe"


class FunctionEntry:
    """A cached decision (``target``) about a Python function, valid while
    the function's code, defaults, keyword defaults and names are the ones
    recorded (the rewritten copy carries them); ``ref``: a weak reference
    to a closure it is kept for, or None."""

    __slots__ = ("target", "ref", "code", "defaults", "kwdefaults", "name", "qualname")

    def __init__(self, f, target, ref=None):
        self.target, self.ref = target, ref
        self.code, self.defaults, self.kwdefaults = f.__code__, f.__defaults__, f.__kwdefaults__
        self.name, self.qualname = f.__name__, f.__qualname__

    def forget(self):
        """Drop the target and what was recorded: the entry matches no
        function any more and keeps its weak reference, freed with the
        entry later, never while a collection starts (see the core's
        ``FunctionEntry.forget``)."""
        self.target = self.code = self.defaults = self.kwdefaults = None

    def matches(self, f):
        return (f.__code__ is self.code and f.__defaults__ is self.defaults
                and f.__kwdefaults__ is self.kwdefaults and f.__name__ is self.name
                and f.__qualname__ is self.qualname)


@callables.register_runtime_class
class Runtime:
    """Routes the operations of code rewritten for one context."""

    def __init__(self, ctx, parent=None):
        self.ctx = ctx
        self.parent = parent
        self._retained = True
        self._holds_dynamic = False
        chain = [type(ctx)]
        outer = parent
        while outer is not None:
            chain.append(type(outer.ctx))
            outer = outer.parent
        self._ctx_types = tuple(chain)
        # The steps whose iterator yielded EXHAUSTED itself, by thread (a
        # list of iterators each), until the loop asks (``loop_ended``):
        # almost always empty.
        self._marker_values = {}
        # The iterators give_iterator made for generator expressions not
        # yet started, as (thread, id) (take_iterator): almost always empty.
        self._given_iterators = []
        self._reset()

    def _reset(self):
        self.generation = _generation()
        self.kinds = engine.intercepted_kinds(self._ctx_types, engine.chain_has_tagging(self))
        self.passes = engine.context_passes(self)
        # Emptied, not only replaced: an entry held weakly is in a cycle
        # with its weak reference's callback, and what it holds (bodies
        # whose code refers to this runtime, which the garbage collector
        # cannot see) would otherwise wait for a collection.
        for held_weakly in ("_functions", "_closures", "_weak_bodies"):
            getattr(self, held_weakly, {}).clear()
        self._resolved = {}
        self._functions = {}
        self._closures = {}
        # The entries (cache, key, callee) kept for functions and classes
        # the program can drop whose targets may keep them alive, forgotten
        # when a collection starts (forget_dynamic, cassette.lifetimes): the
        # young ones (callee not seen to survive a collection) at every
        # collection, the old ones at collections of the older generations;
        # the callees seen to survive one ({id: weak reference}).
        self._young = []
        self._old = []
        self._survivors = {}
        # The entries (cache, key, class) kept for classes their module
        # reaches, asked about again when a collection starts (the young
        # ones, noted since the last collection, at every collection).
        self._held_young = []
        self._held_old = []
        # Bodies of functions, by id, held weakly.
        self._weak_bodies = {}
        self._slots = {}
        self._droppers = {}
        self._tagging = getattr(self.ctx, "tag", None) is not None
        self._chain_tagging = engine.chain_has_tagging(self)
        # Code bound here, by template; how functions of a code object are
        # called, by the code's id: (code, recipe), recipe None when
        # engine.function_recipe said None, or (code, _SEEN_ONCE); the same
        # for partials (None: not known yet); the callees handlers name.
        self._codes = {}
        self._recipes = {}
        self._partial_recipe = None
        self._named = engine.named_callees(self)

    def release(self):
        """Drop every cache and keep nothing more until :meth:`retain`.
        Rewritten code refers to its runtime from its constants, which the
        garbage collector cannot see: while the runtime holds that code, the
        two keep each other (and the context) alive.  Released, a runtime
        lives as long as some code bound to it runs."""
        self._retained = False
        self._reset()

    def retain(self):
        """Cache again (the runtime is in use at top level)."""
        self._retained = True

    def _keep(self, cache, key, value, callee=None):
        """Cache ``value`` under ``key``; ``callee``: what it was made for,
        noted for :meth:`forget_dynamic` when the program can drop it (a
        class: entries of a function the program can drop are never kept
        in a dict, which would keep it alive), or when its module reaches
        it and may drop it (:meth:`_note_held`)."""
        if self._retained:
            if len(cache) >= CACHE_MAX:
                cache.clear()
            cache[key] = value
            if callee is None:
                return
            if not callables.lives_with_its_module(callee):
                self._note_forgettable(cache, key, callee)
            elif callables.dies_by_collection(callee):
                self._note_held(cache, key, callee)

    def _note_held(self, cache, key, callee):
        """Note the entry of ``cache`` under ``key``, kept for ``callee``,
        which its module reaches: when a collection starts,
        :meth:`forget_dynamic` asks again."""
        if len(self._held_young) + len(self._held_old) >= 2 * CACHE_MAX:
            # Drop the notes of entries a full cache dropped.
            self._held_young = [n for n in self._held_young if n[1] in n[0]]
            self._held_old = [n for n in self._held_old if n[1] in n[0]]
        self._held_young.append((cache, key, callee))
        if not self._holds_dynamic:
            self._holds_dynamic = True
            lifetimes.note_holder(self)

    def _ask_about_held(self, everything):
        """Forget the entries of the classes noted as held whose module no
        longer reaches them (all of them, or only those noted since the
        last collection); the others are old now."""
        asked, self._held_young = self._held_young, []
        if everything:
            asked.extend(self._held_old)
            self._held_old = []
        for noted in asked:
            cache, key, callee = noted
            if key not in cache:
                continue
            if callables.lives_with_its_module(callee):
                self._held_old.append(noted)
            else:
                cache.pop(key, None)

    def _note_forgettable(self, cache, key, callee):
        """Note the entry of ``cache`` under ``key``, kept for ``callee``
        and which may keep it alive, to be forgotten at the next
        collection, or at the next of the older generations once ``callee``
        was seen to survive one."""
        if len(self._young) + len(self._old) >= CACHE_MAX:     # no collection for long
            self.forget_dynamic(True)
        survivor = self._survivors.get(id(callee))
        # A function is noted by its entry's weak reference: it may die
        # before any collection, and its entry (the target, the cells it
        # holds) with it; the note must keep neither alive.
        entry = cache[key]
        noted = (cache, key, entry.ref if type(entry) is FunctionEntry and entry.ref is not None
                 else callee)
        if survivor is not None and survivor() is callee:
            self._old.append(noted)
        else:
            self._young.append(noted)
        if not self._holds_dynamic:
            self._holds_dynamic = True
            lifetimes.note_holder(self)

    def forget_dynamic(self, everything):
        """Drop the entries kept for functions and classes the program can
        drop whose targets may keep them alive: a garbage collection is
        starting, which must find the program's objects as unreachable as
        in a plain run (``cassette.lifetimes``) — of the youngest generation
        only, unless ``everything``: then the entries of callees seen to
        survive a collection go too.  Whether entries are left to forget
        or to ask about."""
        self._ask_about_held(everything)
        noted, self._young = self._young, []
        if everything:
            noted.extend(self._old)
            self._old = []
            if len(self._survivors) >= CACHE_MAX // 4:
                self._survivors = {key: ref for key, ref in self._survivors.items()
                                   if ref() is not None}
        survivors = self._survivors
        for cache, key, callee in noted:
            if type(callee) is _ReferenceType:      # a function's entry
                entry = cache.get(key)
                if entry is None or entry.ref is not callee:
                    continue        # (dropped with its function, or replaced)
                entry.forget()      # (its weak reference stays: see FunctionEntry.forget)
                callee = callee()
                if callee is None:
                    continue
            else:
                cache.pop(key, None)
            try:
                ref = _ref(callee)
            except TypeError:       # (a builtin bound to a class: made young again)
                continue
            if len(survivors) >= CACHE_MAX:
                survivors.clear()
            survivors[id(callee)] = ref
        self._holds_dynamic = bool(self._old or self._held_young or self._held_old)
        return self._holds_dynamic

    # -- slots --------------------------------------------------------------

    def slot(self, name):
        """The callable bound into rewritten code for slot ``name``."""
        value = self._slots.get(name)
        if value is None:
            if name == "runtime":
                return self
            if name == "context":
                return self.ctx
            if type(name) is tuple and name[0] == "method":
                value = MethodSite(self, name[1])
            elif name in STRUCTURAL_SLOTS:
                value = getattr(self, STRUCTURAL_SLOTS[name])
            elif name in dispatch.TAGGING_SLOTS:
                value = engine.tagging_slot(self, name)
            else:
                value = OperationSite(self, name)
            self._slots[name] = value
        return value

    def resolve(self, f):
        """What a call site calls instead of ``f``.

        Targets are cached only for callees :func:`callables.is_stable`
        accepts (closures are not: the cache would keep their cells alive),
        in caches of at most ``CACHE_MAX`` entries each.  A function's entry
        holds while its code, defaults, keyword defaults, name and qualified
        name are the ones its rewritten body copied.
        """
        if self.generation != _generation():
            self._reset()
        if type(f) is _FunctionType:
            entry = self._functions.get(id(f))
            if entry is not None and entry.ref() is f and entry.matches(f):
                return pin(entry.target, f)
            return self._resolve_function(f)
        if type(f) is _partial:
            return self._resolve_partial(f)
        if type(f) is _MethodType:
            # A bound method resolves as its function, bound again.
            inner = self.resolve(f.__func__)
            return f if inner is f.__func__ else _MethodType(inner, f.__self__)
        if (type(f) is _BuiltinMethodType or type(f) is _MethodWrapperType
                or type(f) is callables.BuiltinCMethodType):
            # A builtin bound to an instance resolves as the descriptor found
            # on its class, bound again.
            callee, owner = callables.split_bound(f)
            if owner is not _NO_SELF:
                inner = self.resolve(callee)
                return f if inner is callee else _MethodType(inner, owner)
        if callables.is_stable(f):
            key = callables.resolution_key(f)
            target = self._resolved.get(key)
            if target is None:
                target = self._target(f)
                self._keep(self._resolved, key, target, f)
            return target
        return self._target(f)

    def _resolve_function(self, f):
        """A Python function not in ``_functions`` (which keeps only those
        without a closure that live with their module).  Functions made at
        run time — closures, lambdas, generator expressions, nested ``def``
        — take their code's recipe (``engine.function_recipe``).  They are
        cached weakly: the entry dies with the function, so the cache never
        keeps the program's cells (and what they hold) alive; an entry whose
        target may keep the function alive itself
        (``callables.may_be_cached_weakly``) is also dropped when a garbage
        collection starts.  A hooked target refers to the function itself
        and is not cached."""
        key = id(f)
        entry = self._closures.get(key)
        if entry is not None and entry.ref() is f and entry.matches(f):
            return pin(entry.target, f)
        code = f.__code__
        known = self._recipes.get(id(code))
        recipe = known[1] if known is not None and known[0] is code else None
        if (type(recipe) is tuple and not f.__dict__
                and self._named.get(key) is not f):
            target = self._made_by(recipe, f)
            if recipe[1] is None and not recipe[2]:
                self._keep_closure(key, f, target)
            return target
        target = self._target(f)
        if f.__closure__ is None and callables.lives_with_its_module(f):
            self._keep_weakly(self._functions, key, f, target)
            pin(target, f)
        elif (target is not f and type(target) is _FunctionType
                and target.__closure__ is f.__closure__):  # the rewritten body
            self._keep_closure(key, f, target)
        if known is None or known[0] is not code:
            self._keep(self._recipes, id(code), (code, _SEEN_ONCE))
        elif recipe is _SEEN_ONCE:
            # The second function of this code: make the recipe.
            made = engine.function_recipe(self, f)
            if made is not None:
                made = (self.bind(made[0]),) + made[1:]
            self._recipes[id(code)] = (code, made)
        return target

    def _made_by(self, recipe, f):
        """The target of function ``f`` by its code's recipe.  Hooked, the
        hooks' wrapper refers to ``f`` and is made for the call; the body is
        kept for ``f`` (weakly), so a frame that outlives the call refers to
        what ``f`` keeps, as plainly."""
        code, plan, enclosing = recipe
        if plan is None and not enclosing:
            return engine.function_running(code, f)
        entry = self._weak_bodies.get(id(f))
        if entry is not None and entry.ref() is f and entry.matches(f):
            body = entry.target
        else:
            body = engine.function_running(code, f)
            self._keep_weakly(self._weak_bodies, id(f), f, body)
        return engine.hooked_as(self, f, plan, enclosing, body)

    def _keep_closure(self, key, f, target):
        self._keep_weakly(self._closures, key, f, target)

    def _keep_weakly(self, closures, key, f, target):
        """Keep ``target`` for function ``f`` in ``closures`` under ``key``
        until ``f`` dies — or, unless ``callables.may_be_cached_weakly(f)``
        (the target cannot keep ``f`` alive itself), until a collection
        starts.  The entry holds ``f`` only weakly: a target that is ``f``
        is kept as None, a hooked one is weakened (:func:`weaken`)."""
        if not self._retained:
            return
        if len(closures) >= CACHE_MAX:
            closures.clear()

        def forget(ref, key=key, closures=closures):
            current = closures.get(key)
            if current is not None and current.ref is ref:
                del closures[key]

        ref = _ref(f, forget)
        if target is f:
            target = None
        else:
            weaken(target, f, ref)
        closures[key] = FunctionEntry(f, target, ref)
        if not callables.may_be_cached_weakly(f):
            # The target may keep f alive: kept until a collection starts.
            self._note_forgettable(closures, key, f)

    def _resolve_partial(self, p):
        """A ``functools.partial`` (never cached: it holds the program's
        arguments), by the recipe of partials when it applies."""
        if self._named.get(id(p)) is p:
            return self._target(p)          # decided by itself
        recipe = self._partial_recipe
        if recipe is None:
            recipe = self._partial_recipe = engine.partial_recipe(self, p) or _NO_RECIPE
        if recipe is _NO_RECIPE:
            return self._target(p)
        plan, enclosing = recipe
        return engine.hooked_as(self, p, plan, enclosing,
                                _partial(self.resolve(p.func), *p.args, **p.keywords))

    def method(self, obj, name):
        """For ``obj.name(…)``: M such that ``M(obj, …)`` makes the call."""
        try:
            if self._chain_tagging:
                found = engine.tagged_method(self, obj, name)
                if found is not None:
                    return found
            tp = type(obj)
            descriptor = _lookup(tp, name)
            if (descriptor is not None and callables.is_method_descriptor(descriptor)
                    and tp.__getattribute__ is object.__getattribute__
                    and _lookup(tp, "__getattr__") is None):
                try:
                    instance_dict = object.__getattribute__(obj, "__dict__")
                except AttributeError:
                    instance_dict = None
                if instance_dict is None or name not in instance_dict:
                    return self.resolve(descriptor)
            attribute = getattr(obj, name)
            if callables.is_frame_sensitive(attribute):
                return _frame_reader_dropping_self(attribute)
            if callables.is_stable(attribute):
                return self._dropper(self.resolve(attribute), attribute)
            return DropSelf(self.resolve(attribute))
        except BaseException as exception:
            _drop_library_entries(exception)
            raise

    def initialized(self, result, obj):
        """What a constructor returns (``rewrite.constructor_template``;
        only the Cython core makes them): ``obj`` when ``__init__``
        returned ``result`` None."""
        engine.check_initialized(result)
        return obj

    def split(self, bound):
        """For 3.12's ``super().name(…)``: ``(self, M)`` such that
        ``M(self, …)`` makes the call."""
        if type(bound) is _MethodType:
            return bound.__self__, self.resolve(bound.__func__)
        if type(bound) is _MethodWrapperType:   # a C slot's: super().__init__()
            callee, owner = callables.split_bound(bound)
            if owner is not _NO_SELF:
                return owner, self.resolve(callee)
        if callables.is_frame_sensitive(bound):
            return None, _frame_reader_dropping_self(bound)
        if callables.is_stable(bound):
            return None, self._dropper(self.resolve(bound), bound)
        return None, DropSelf(self.resolve(bound))

    @callables.acts_for_program
    def next_step(self, iterator):
        """One step of a ``for`` loop: the next value or :data:`EXHAUSTED`.

        A value that is :data:`EXHAUSTED` itself (the program can reach
        the object) is noted for :meth:`loop_ended`, which the rewritten
        loop asks on that branch alone; the core's twin says why."""
        try:
            site = self.slot("next")
            try:
                value = next(iterator) if site.plan_is_empty() else site(iterator)
            except StopIteration:
                if self._marker_values:
                    self._forget_marker_values(iterator)
                return EXHAUSTED
            if value is EXHAUSTED:
                self._marker_values.setdefault(_get_ident(), []).append(iterator)
            return value
        except BaseException as exception:
            _drop_library_entries(exception)
            raise

    @callables.acts_for_program
    def give_iterator(self, iterable):
        """``iter(iterable)`` for the generator expression about to be
        called with it (where the layer's generator expressions make their
        own iterator), noted in this thread for :meth:`take_iterator`."""
        try:
            iterator = self.slot("iter")(iterable)
        except BaseException as exception:
            _drop_library_entries(exception)
            raise
        # By id: a call abandoned before its prologue (an ``execute`` that
        # does not make it) must not keep the iterator alive.
        noted = self._given_iterators
        if len(noted) >= GIVEN_ITERATORS_KEPT:
            del noted[0]
        noted.append((_get_ident(), id(iterator)))
        return iterator

    @callables.acts_for_program
    def take_iterator(self, value):
        """A generator expression's prologue: ``value`` itself when
        :meth:`give_iterator` made it in this thread, else ``iter(value)``
        as the plain prologue makes it (code called from ``gi_code``)."""
        noted = self._given_iterators
        if noted:
            step = (_get_ident(), id(value))
            if step in noted:
                try:
                    noted.remove(step)
                except ValueError:      # another thread's give_iterator dropped it
                    pass
                return value
        try:
            return self.slot("iter")(value)
        except BaseException as exception:
            _drop_library_entries(exception)
            raise

    def loop_ended(self, iterator):
        """After :meth:`next_step` returned :data:`EXHAUSTED` for
        ``iterator`` in this thread: whether it found the iterator
        exhausted (False: the iterator yielded that object, the loop's
        value this time)."""
        return not (self._marker_values and self._forget_marker_values(iterator))

    def _forget_marker_values(self, iterator):
        """Forget the steps of ``iterator`` in this thread that returned
        :data:`EXHAUSTED` as its value; whether there was one."""
        # Each thread changes only its own list, so no thread's note is lost
        # to another's (the core does the same under the GIL).
        thread = _get_ident()
        noted = self._marker_values.get(thread)
        if not noted:
            return False
        kept = [step for step in noted if step is not iterator]
        if len(kept) == len(noted):
            return False
        if kept:
            noted[:] = kept
        else:
            self._marker_values.pop(thread, None)
        return True

    def enter(self, manager):
        """``with manager``: ``(value of __enter__, exit callable)``."""
        try:
            return self._enter(manager, "__enter__", "__exit__",
                               engine.native_with_error)
        except BaseException as exception:
            _drop_library_entries(exception)
            raise

    def entry_of(self, manager):
        """``with manager`` where the layer calls the entry as a method
        (``Layer.enter_with``'s ``entry_slot``, 3.15): an object whose
        ``__enter__()`` is ``enter(manager)``."""
        return WithEntry(self, manager)

    def async_enter(self, manager):
        """``async with manager``: ``(awaitable of __aenter__, exit callable)``."""
        try:
            return self._enter(manager, "__aenter__", "__aexit__",
                               engine.native_async_with_error)
        except BaseException as exception:
            _drop_library_entries(exception)
            raise

    def _enter(self, manager, enter_name, exit_name, native_error):
        tp = type(manager)
        enter = _lookup(tp, enter_name)
        exit_ = _lookup(tp, exit_name)
        if enter is None or exit_ is None:
            native_error(manager)
        value = self.call_special(enter, manager)
        return value, Exit(self, exit_, manager)

    def caught(self, exception):
        """At the entry of an exception handler of the program: the caught
        exception's traceback loses the library's entries."""
        _remove_library_entries(exception)

    def route_annotate(self, owner):
        """Before rewritten code reads ``owner.__annotations__``: route the
        ``__annotate__`` function that reading calls from C (PEP 649)."""
        routing.route_annotate(owner)

    def nooverdub(self, callee):
        """What a pass's ``cassette.ir.nooverdub(callee)`` constant becomes:
        ``callee``, called the way a handler is — not overdubbed by this
        context, still seen by an enclosing one.  A frame-sensitive callee
        (``locals``, ``sys._getframe`` …) is itself: it reads the frame of the
        code that calls it."""
        if self.parent is None or callables.is_frame_sensitive(callee):
            return callee
        return NotOverdubbed(self, callee)

    @callables.acts_for_program
    def call_special(self, descriptor, obj, /, *args):
        """Call a special method found on ``type(obj)`` as an operation."""
        if callables.is_method_descriptor(descriptor):
            return self.resolve(descriptor)(obj, *args)
        if hasattr(type(descriptor), "__get__"):
            descriptor = descriptor.__get__(obj, type(obj))
        return self.resolve(descriptor)(*args)

    # -- what engine.target builds with ------------------------------------

    def _dropper(self, target, callee):
        """A cached :class:`DropSelf` of ``target``, the target of
        ``callee`` (only for stable callees, which :meth:`resolve` caches)."""
        if type(callee) is _FunctionType:
            # (A function dies when the program drops it, from its module
            # too: kept here, even until the next collection, its target —
            # its defaults — would live on.)
            return DropSelf(target)
        dropper = self._droppers.get(id(target))
        if dropper is None or dropper.target is not target:
            dropper = DropSelf(target)
            self._keep(self._droppers, id(target), dropper, callee)
        return dropper

    def _target(self, f):
        return engine.target(self, f)

    def rewritten(self, function):
        """``function``'s body rewritten for this runtime, cached weakly, as
        ``_closures`` keeps targets."""
        entry = self._weak_bodies.get(id(function))
        if entry is not None and entry.ref() is function and entry.matches(function):
            return entry.target
        body = engine.function_running(self.bind(engine.template_of(function, self)), function)
        self._keep_weakly(self._weak_bodies, id(function), function, body)
        return body

    def bind(self, template, escapes=False):
        """``template``'s code with its slots bound to this runtime (the same
        object each time unless ``escapes``: the code is handed to the
        user)."""
        if escapes:
            return template.bind(self.slot)
        code = self._codes.get(template)
        if code is None:
            code = template.bind(self.slot)
            self._keep(self._codes, template, code)
        return code

    def adopt(self, ctx):
        """Never: code bound here closes over this runtime's context (its
        propagation slots are the propagation layer's closures), so this
        runtime cannot serve another.  The Cython core's runtimes can
        (see ``entry.runtime_of``)."""
        return False

    def instantiation(self, cls):
        """The body of calling class ``cls`` (see :func:`engine.instantiate`)."""
        return _partial(engine.instantiate, self.call, cls)

    def array_function(self, dispatcher):
        """The body of numpy dispatcher ``dispatcher`` (see
        :func:`engine.call_array_function`)."""
        return _partial(engine.call_array_function, self, dispatcher)

    def source_runner(self, evaluate):
        """The body of ``exec`` or ``eval`` (see :func:`engine.run_source`;
        here a frame of cassette's stands between the code and its caller)."""
        return _partial(engine.run_source, self, evaluate)

    def hooked(self, callee, plan, body):
        return hooked(self, callee, plan, body)

    def tagged_primitive(self, callee, primitive):
        """What calls of primitive ``callee`` (made by calling ``primitive``)
        become under tagging: the tagging fallback, named like ``callee``."""
        result = _partial(engine.call_untagged, self.ctx, callee, primitive)
        engine.name_like(result, callee)
        return result

    def nested_overdub(self):
        return NestedOverdub(self)

    def call(self, f, /, *args, **kwargs):
        """Call ``f`` as an operation of this context."""
        target = self.resolve(f)
        # (No keywords at all when there are none: see engine.py's call_shim.)
        return target(*args, **kwargs) if kwargs else target(*args)

    # -- the protocol of one operation (reference §3.2) --------------------------

    def invoke(self, handler, /, *args, **kwargs):
        """Call a handler; under a nested overdub the enclosing context
        intercepts it like any other code."""
        if self.parent is not None:
            handler = self.parent.resolve(handler)
        return handler(*args, **kwargs) if kwargs else handler(*args)

    @callables.acts_for_program
    def operate(self, plan, callee, body, primitive, args, kwargs, operation=None):
        """The protocol of one operation (reference §3.2); ``operation`` as in
        the core's ``Protocol.run``."""
        ctx = self.ctx
        selector = plan.prehook
        if selector is not None:
            handler = selector.unconditional or selector.select(ctx, args)
            if handler is not None:
                self.invoke(handler, ctx, callee, *args, **kwargs)
        out = OverdubInstead
        selector = plan.execute
        if selector is not None:
            handler = selector.unconditional or selector.select(ctx, args)
            if handler is not None:
                out = self.invoke(handler, ctx, callee, *args, **kwargs)
        if out is OverdubInstead:
            if body is not None:
                out = _call_body(body, args, kwargs)
            else:
                handler = None
                selector = plan.fallback
                if selector is not None:
                    handler = selector.unconditional or selector.select(ctx, args)
                if ((handler is not None or (self._tagging and _any_tagged(args)))
                        and operation is not None
                        and engine.operation_has_body(operation, args)):
                    out = primitive(*args, **kwargs) if kwargs else primitive(*args)
                elif handler is not None:
                    out = self.invoke(handler, ctx, callee, *args, **kwargs)
                else:
                    target = primitive if self.parent is None else self.parent.resolve(primitive)
                    if self._tagging:
                        out = dispatch.tagging_fallback(ctx, callee, target, args, kwargs)
                    else:
                        out = target(*args, **kwargs) if kwargs else target(*args)
        selector = plan.posthook
        if selector is not None:
            handler = selector.unconditional or selector.select(ctx, args)
            if handler is not None:
                self.invoke(handler, ctx, out, callee, *args, **kwargs)
        return out

    def run(self, f, args, kwargs, ctx=None):
        # The entry rewrites ``f`` without going through ``resolve``: bring
        # the intercepted kinds up to date first (a hook may have been
        # registered since this runtime last ran).  (``ctx``, the context
        # the caller expects this runtime to serve, always is: a pure-Python
        # runtime is never adopted.)
        if self.generation != _generation() or self.passes != engine.context_passes(self):
            self._reset()
        return engine.run(self, f, args, kwargs)


def _any_tagged(args):
    """Whether some operand is a tagged value (of any context): only then can
    running an operation's Python body differ from the tagging fallback."""
    tagged = dispatch.TAGGED
    return tagged is not None and any(isinstance(type(a), type(tagged)) for a in args)


def hooked(runtime, callee, plan, body):
    """A callee with handlers: calling the returned function runs the
    protocol of reference §3.2.  A plain function (not an object with
    ``__call__``) so that the interpreter calls it without re-entering
    itself from C, which would cost recursion budget."""
    operate = runtime.operate
    # The callee and None; weakened (see weaken): the pinned callee or
    # _WEAKENED, and a weak reference to it.
    held = [callee, None]

    @callables.acts_for_program
    def hooked_call(*args, **kwargs):
        callee = held[0]
        if held[1] is not None:
            if callee is _WEAKENED:
                callee = held[1]()
                if callee is None:
                    raise ReferenceError("cassette: a hooked function was called after it died")
            else:
                held[0] = _WEAKENED        # unpinned
        try:
            return operate(plan, callee, body, callee, args, kwargs)
        except BaseException as exception:
            _drop_library_entries(exception)
            raise

    hooked_call._cassette_held = held
    hooked_call._cassette_body = body
    engine.name_like(hooked_call, callee)
    if not callable(callee):
        # Calling it fails anyway; the interpreter's message names it by its
        # str() (``None argument after * must be an iterable``), as the
        # core's Hooked does.
        return _NamedByStr(hooked_call, callee)
    return hooked_call


_WEAKENED = object()


def weaken(target, callee, ref):
    """Have ``target`` — a hooked target (:func:`hooked`) of function
    ``callee`` — and the hooked targets it wraps hold ``callee`` by ``ref``,
    a weak reference to it: the target is cached for ``callee``, which the
    program can drop (the Cython core's ``Hooked.weaken``).  Between its
    resolution and its call, the callee is held (:func:`pin`)."""
    while type(target) is _FunctionType:
        held = target.__dict__.get("_cassette_held")
        if held is None:
            return
        if held[1] is None and held[0] is callee:
            held[0], held[1] = _WEAKENED, ref
        target = target._cassette_body


def pin(target, callee):
    """``target`` — cached for function ``callee``, which it holds weakly —
    as its call site calls it: holding ``callee`` until the call.  A call
    site replaces the callee with its target, and the function may be a
    temporary (a generator expression's) that nothing else holds
    meanwhile.  None stands for ``callee`` itself."""
    if target is None:
        return callee
    if type(target) is _FunctionType:
        held = target.__dict__.get("_cassette_held")
        if held is not None and held[1] is not None:
            held[0] = callee
    return target


class _NamedByStr:
    """A call of ``call`` that, in the interpreter's messages, is named by
    ``str(named)`` (it has no ``__qualname__`` of its own)."""

    __slots__ = ("call", "named")

    def __init__(self, call, named):
        self.call = call
        self.named = named

    def __call__(self, /, *args, **kwargs):
        return self.call(*args, **kwargs)

    def __str__(self):
        return str(self.named)


@callables.acts_for_program
def _call_body(body, args, kwargs):
    """``body(*args, **kwargs)`` with the recursion budget of a plain call.

    The protocol adds three Python frames (the hooked function,
    ``operate`` and this one) to every hooked level; they are credited back
    while the body runs.  Fixed-arity calls keep the interpreter from re-entering
    itself from C (``f(*args)`` does on 3.11 and 3.12)."""
    # (No Python frame of cassette's here: the program may be at its limit.)
    with recursion_limit_lock:
        _setrecursionlimit(_getrecursionlimit() + _HOOK_FRAMES)
    try:
        if kwargs:
            return body(*args, **kwargs)
        n = len(args)
        if n == 0:
            return body()
        if n == 1:
            return body(args[0])
        if n == 2:
            return body(args[0], args[1])
        if n == 3:
            return body(args[0], args[1], args[2])
        if n == 4:
            return body(args[0], args[1], args[2], args[3])
        return body(*args)
    finally:
        with recursion_limit_lock:
            _setrecursionlimit(_getrecursionlimit() - _HOOK_FRAMES)


_HOOK_FRAMES = 3
_getrecursionlimit = sys.getrecursionlimit
_setrecursionlimit = sys.setrecursionlimit


class NotOverdubbed:
    """A callee a pass marked ``nooverdub``, under a nested overdub: called
    as a handler is, so the enclosing context sees it."""

    __slots__ = ("runtime", "callee")

    def __init__(self, runtime, callee):
        self.runtime = runtime
        self.callee = callee

    def __call__(self, /, *args, **kwargs):
        return self.runtime.invoke(self.callee, *args, **kwargs)

    def __repr__(self):
        return f"<not overdubbed {self.callee!r}>"


class DropSelf:
    """Called as ``M(obj, *args)`` by a rewritten method call whose attribute
    was not a method: calls the target without ``obj``."""

    __slots__ = ("target",)

    def __init__(self, target):
        self.target = target

    @callables.acts_for_program
    def __call__(self, _self, /, *args, **kwargs):
        try:
            return self.target(*args, **kwargs) if kwargs else self.target(*args)
        except BaseException as exception:
            _drop_library_entries(exception)
            raise


def _frame_reader_dropping_self(callee):
    """What :meth:`Runtime.method` gives for ``obj.name(…)`` when the
    attribute is a frame-sensitive callable (``sys._getframe``,
    ``builtins.locals`` …) rather than a method: ``M(obj, *args)`` reading
    the frame of the code that calls ``M``.  (The core's DropSelf is C and
    puts no frame between; this runtime's is Python and would be the frame
    read.)"""
    return _FRAME_READERS_DROPPING_SELF.get(id(callee)) or DropSelf(callee)


def _getframe_dropping_self(_self, depth=0, /):
    return _getframe(_index(depth) + 1)


def _getframemodulename_dropping_self(_self, depth=0):
    return _getframemodulename(depth=_index(depth) + 1)


def _reading_the_callers(callee, read):
    """``callee`` (``locals``, ``vars``, ``dir``, ``globals``) dropping the
    object: without arguments, ``read(frame)`` of the frame calling it;
    with some, ``callee`` itself (which reads none, or raises as plainly)."""
    def reader(_self, /, *args, **kwargs):
        if args or kwargs:
            return callee(*args, **kwargs)
        return read(_getframe(1))
    return reader


_getframe = sys._getframe
_getframemodulename = getattr(sys, "_getframemodulename", None)
_index = operator.index
_FRAME_READERS_DROPPING_SELF = {
    id(callee): reader for callee, reader in (
        (_getframe, _getframe_dropping_self),
        (_getframemodulename, _getframemodulename_dropping_self),
        (locals, _reading_the_callers(locals, LAYER.default_locals)),
        (vars, _reading_the_callers(vars, LAYER.default_locals)),
        (dir, _reading_the_callers(dir, lambda frame: sorted(LAYER.default_locals(frame)))),
        (globals, _reading_the_callers(globals, lambda frame: frame.f_globals)))
    if callee is not None}


class Exit:
    """The ``__exit__`` callable a rewritten ``with`` pushes."""

    __slots__ = ("runtime", "method", "manager")

    def __init__(self, runtime, method, manager):
        self.runtime = runtime
        self.method = method
        self.manager = manager

    @callables.acts_for_program
    def __call__(self, exc_type, exc_value, traceback, /):
        try:
            return self.runtime.call_special(
                self.method, self.manager, exc_type, exc_value, traceback)
        except BaseException as exception:
            _drop_library_entries(exception)
            raise


class WithEntry:
    """What a rewritten ``with`` enters on 3.15 (``Runtime.entry_of``): its
    ``__enter__`` makes the entry of the manager.  (The core's is C code,
    which 3.15 lets the interrupt of a manager's ``__enter__`` wait until the
    block; this one is Python code, which takes it before.)"""

    __slots__ = ("runtime", "manager")

    def __init__(self, runtime, manager):
        self.runtime = runtime
        self.manager = manager

    @callables.acts_for_program
    def __enter__(self):
        try:
            return self.runtime.enter(self.manager)
        except BaseException as exception:
            _drop_library_entries(exception)
            raise


class NestedOverdub:
    """The body of ``cassette.overdub`` called from overdubbed code: the
    inner run, whose handlers the enclosing runtime intercepts."""

    __slots__ = ("parent",)

    def __init__(self, parent):
        self.parent = parent

    def __call__(self, ctx, f, /, *args, **kwargs):
        try:
            engine.check_arguments(ctx, f)
            runtime = Runtime(ctx, self.parent)
            try:
                return runtime.run(f, args, kwargs)
            finally:
                runtime.release()
        except BaseException as exception:
            _drop_library_entries(exception)
            raise


# The arrangements of operations.ARRANGED_SITES: stack order -> arguments.
_ARRANGEMENTS = {
    "swap": lambda item, container: (container, item),
    "value_last": lambda value, obj, key: (obj, key, value),
    "slice": lambda obj, start, stop: (obj, slice(start, stop)),
    "slice_value_last": lambda value, obj, start, stop: (obj, slice(start, stop), value),
}


class MethodSite:
    """The method lookup of the sites of one name, ``obj.name(…)``
    (``Slot(("method", name))``): ``M`` such that ``M(obj, …)`` makes the
    call (the Cython core keeps the last class's answer)."""

    __slots__ = ("runtime", "name")

    def __init__(self, runtime, name):
        self.runtime = runtime
        self.name = name

    def __call__(self, obj):
        return self.runtime.method(obj, self.name)


class OperationSite:
    """The slot of one operation kind (``add``, ``getattr`` …)."""

    __slots__ = ("runtime", "kind", "operation", "arrange", "negate",
                 "plan", "generation")

    def __init__(self, runtime, kind):
        name, arrangement, negate = ARRANGED_SITES.get(kind, (kind, None, False))
        self.runtime = runtime
        self.kind = kind
        self.operation = OPERATIONS[name]
        self.arrange = _ARRANGEMENTS.get(arrangement)
        self.negate = negate
        self.generation = -1

    def plan_is_empty(self):
        if self.generation != _generation():
            self.plan = dispatch.plan(type(self.runtime.ctx), self.operation.callee)
            self.generation = _generation()
        return self.plan is _EMPTY

    @callables.acts_for_program
    def __call__(self, /, *operands):
        try:
            args = operands if self.arrange is None else self.arrange(*operands)
            runtime = self.runtime
            if self.plan_is_empty() and not runtime._tagging:
                if runtime.parent is not None:
                    out = runtime.parent.call(self.operation.callee, *args)
                else:
                    out = self.operation.implementation(*args)
            else:
                callee = self.operation.callee
                out = runtime.operate(self.plan, callee, None, callee, args, {},
                                      self.operation.name)
            return (not out) if self.negate else out
        except BaseException as exception:
            _drop_library_entries(exception)
            raise
