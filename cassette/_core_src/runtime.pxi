# The Runtime: one overdub call's state, its call-site resolution caches
# (FunctionEntry), hooks and fallbacks.
#
# Part of cassette/_core.pyx (included there; see its map).

# What the core needs of the standard library is bound here, at import: a
# program may patch or delete anything of it (issue 35, item 2).
cdef object FunctionType = types.FunctionType
cdef object _intern = sys.intern
cdef object _sys_modules = sys.modules
cdef object _partial_type = functools.partial
cdef object MethodType = types.MethodType
cdef object _object_new = object.__new__
cdef object MethodWrapperType = types.MethodWrapperType
cdef object ModuleType = types.ModuleType
cdef object _split_bound = callables.split_bound
cdef object BuiltinFunctionType = types.BuiltinFunctionType
cdef object _BuiltinCMethodType = callables.BuiltinCMethodType
cdef object MethodDescriptorType = types.MethodDescriptorType
cdef object WrapperDescriptorType = types.WrapperDescriptorType
cdef object NO_SELF = callables.NO_SELF
cdef object EMPTY = dispatch.Plan.empty
cdef object _EXHAUSTED = EXHAUSTED
cdef object _OverdubInstead = OverdubInstead
cdef object _dispatch_module = dispatch
cdef object _is_stable = callables.is_stable
cdef object _lives = callables.lives_with_its_module
cdef object _note_holder = lifetimes.note_holder
cdef object _forget_before_collecting = lifetimes.forget_before_collecting


def _collection_starts(phase, info):
    """The garbage collector's hook (``lifetimes.call_back_through``):
    ``lifetimes.forget_before_collecting``, called as cassette's own work —
    a collection may start while the program is at its recursion limit —
    after the tagging layer's caches of the types seen last let them go."""
    if phase == "start":
        _forget_tagging_seen_last()
    return cassette_own_call(_forget_before_collecting, phase, info, 2)


lifetimes.call_back_through(_collection_starts)
cdef object _may_be_cached_weakly = callables.may_be_cached_weakly
cdef object _remove_library_entries = callables.remove_library_entries
cdef object _is_frame_sensitive = callables.is_frame_sensitive
cdef object _is_library_code = callables.is_library_code
cdef object _instances_are_primitives_asked = callables.instances_are_primitives
cdef object _plan = dispatch.plan
# The address of a type -> (callables.instances_are_primitives(type), the
# type's version tag then).  By address, not by the type: the table must not
# keep a class of the program's alive; version tags are never reused, so a
# class made later at the same address has another (and 0 is never kept).
cdef dict _PRIMITIVE_KINDS = {}


cdef inline bint _instances_are_primitives(tp) except -1:
    cdef unsigned int version = cassette_class_version(<PyTypeObject *>tp)
    key = PyLong_FromVoidPtr(<void *>tp)
    cdef PyObject *known = PyDict_GetItemWithError(_PRIMITIVE_KINDS, key)
    if (known is not NULL and version != 0
            and <object>(<tuple>(<object>known))[1] == version):
        return (<tuple>(<object>known))[0] is True
    answer = cassette_own_call(_instances_are_primitives_asked, tp, None, 1)
    version = cassette_class_version(<PyTypeObject *>tp)
    if version == 0:
        return answer
    if len(_PRIMITIVE_KINDS) >= 1024:
        _PRIMITIVE_KINDS.clear()
    _PRIMITIVE_KINDS[key] = (answer, version)
    return answer


# The same for callables.lives_with_its_module(class) (``_class_lives``).
cdef dict _CLASSES_LIVING = {}


cdef bint _class_lives(tp) except -1:
    """``callables.lives_with_its_module(tp)`` for class ``tp``: True for a
    static type, kept by address and version tag for a heap type."""
    cdef unsigned int version
    if not PyType_HasFeature(<PyTypeObject *>tp, Py_TPFLAGS_HEAPTYPE):
        return True
    version = cassette_class_version(<PyTypeObject *>tp)
    key = PyLong_FromVoidPtr(<void *>tp)
    cdef PyObject *known = PyDict_GetItemWithError(_CLASSES_LIVING, key)
    if (known is not NULL and version != 0
            and <object>(<tuple>(<object>known))[1] == version):
        return (<tuple>(<object>known))[0] is True
    answer = _lives_with_its_module(tp)
    version = cassette_class_version(<PyTypeObject *>tp)
    if version != 0:
        if len(_CLASSES_LIVING) >= 1024:
            _CLASSES_LIVING.clear()
        _CLASSES_LIVING[key] = (answer, version)
    return answer
cdef object _route_class = routing.route_class
cdef object _route_callee = routing.route_callee
cdef object _operation_has_body = engine.operation_has_body

cdef Py_ssize_t _generation = -1


cdef Py_ssize_t CACHE_MAX = engine.RESOLUTION_CACHE_MAX
cdef Py_ssize_t GIVEN_ITERATORS_KEPT = engine.GIVEN_ITERATORS_KEPT

#: How many records of lists and tuples a runtime remembers (see
#: ``Runtime._record_of``), and how many addresses of functions it resolved
#: by their code's recipe (``Runtime._seen_before``).
cdef enum:
    RECENT_RECORDS_BITS = 5
    RECENT_RECORDS = 1 << RECENT_RECORDS_BITS
    SEEN_FUNCTIONS_BITS = 6
    SEEN_FUNCTIONS = 1 << SEEN_FUNCTIONS_BITS
    TRANSIENT_BITS = 8
    TRANSIENT_ENTRIES = 1 << TRANSIENT_BITS
    RECENT_CALLEES_BITS = 9
    RECENT_CALLEES = 1 << RECENT_CALLEES_BITS
    METHOD_SITE_CLASSES = 4

cdef int SUSPENDABLE = callables.SUSPENDING

#: What ``Runtime._recipes`` holds for code whose functions ``engine.target``
#: decides one by one (``engine.function_recipe`` said None).
cdef object _NO_RECIPE = object()


def _on_generation_change(Py_ssize_t generation):
    global _generation, cassette_dispatch_generation
    _generation = generation
    cassette_dispatch_generation = generation


# Slots whose value is a method of the runtime (the rest are operations).
cdef dict _STRUCTURAL = STRUCTURAL_SLOTS

# The arrangements of operations.ARRANGED_SITES, as the codes the operation
# sites switch on (0: the stack order is the arguments' order).
cdef dict _ARRANGEMENT_CODES = {"swap": 1, "value_last": 2, "slice": 3, "slice_value_last": 4}


cdef inline bint _any_tagged(tuple args):
    for arg in args:
        if _is_tagged(arg):
            return True
    return False


cdef inline bint _all_builtin(tuple args):
    """True when every operand is an instance of a builtin (non-heap) type
    and none is a class: no operand's class can implement the operation in
    Python (the cheap half of ``engine.operation_has_body``)."""
    for arg in args:
        # A tagged value: its primal value decides.
        if not cassette_builtin_instance(_innermost(arg)):
            return False
    return True


# The names of builtin methods, interned, by their PyMethodDef's address:
# a direct-mapped table (a slot's name is the one its def had last).
cdef enum:
    BUILTIN_NAMES_BITS = 8
    BUILTIN_NAMES = 1 << BUILTIN_NAMES_BITS
cdef void *_builtin_name_defs[BUILTIN_NAMES]
cdef list _builtin_names = [None] * BUILTIN_NAMES


cdef object _builtin_name(object f):
    """The name of builtin ``f`` (``__name__`` makes a new string each time)."""
    cdef void *method_def = cassette_builtin_def(f)
    cdef Py_ssize_t slot = cassette_address_slot(method_def, BUILTIN_NAMES_BITS)
    if _builtin_name_defs[slot] == method_def:
        return <object>PyList_GET_ITEM(_builtin_names, slot)
    name = _intern(cassette_builtin_def_name(f).decode("utf-8"))
    _builtin_names[slot] = name
    _builtin_name_defs[slot] = method_def
    return name


cdef dict _entry_decisions = engine._decisions     # cleared, never replaced
from cassette.passes import NoPass as _NoPass
import sys as _sys_module
cdef dict _sys_dict = _sys_module.__dict__
cdef tuple _sys_hooks = routing._SYS_HOOKS


cdef inline bint _routing_current():
    """Whether ``routing.route_new_classes`` has nothing to do now — its
    early returns, read here: no routing installed, or the hooks of
    ``sys`` still the interpreter's and no module imported since its
    last scan."""
    if routing._route is None:
        return True
    for name in _sys_hooks:
        hook = _sys_dict.get(name)
        if type(hook) is not BuiltinFunctionType:
            return False
    return len(routing._modules) == routing._modules_seen


# The builtin itself, called for a non-iterator: Cython compiles ``next(x,
# d)`` to code of its own, whose TypeError is worded differently from the
# interpreter's ("range object is not an iterator", without the quotes).
import builtins as _builtins_module
cdef object _builtin_next = _builtins_module.next


cdef inline object _resolved_key(object f, object tp):
    """The key of ``Runtime._resolved`` for ``f`` of type ``tp``
    (callables.resolution_key's rule): ``f``, and for a builtin its method
    definition too.  Builtins compare equal when they share their C
    function and their self, also when one is a class method and the other
    a static method (``xxsubtype.spamlist``'s ``classmeth`` and
    ``staticmeth``), which the interpreter calls differently."""
    if tp is BuiltinFunctionType or tp is _BuiltinCMethodType:
        return (f, PyLong_FromVoidPtr(cassette_builtin_def(f)))
    return f


@cython.final
cdef class FunctionEntry:
    """A cached decision about a Python function, valid while the function's
    code, defaults, keyword defaults and names are the ones recorded (the
    rewritten copy carries them)."""

    cdef object ref, target
    # The callback of ``ref`` that forgets this entry when its function
    # dies (``Runtime._keep_weakly``), or None: told when the entry goes.
    cdef Forget on_death
    cdef PyObject *code
    cdef PyObject *defaults
    cdef PyObject *kwdefaults
    cdef PyObject *name
    cdef PyObject *qualname
    cdef tuple keep      # holds the recorded objects alive

    cdef record(self, f):
        cdef PyFunctionObject *function = <PyFunctionObject *>f
        self.code = function.func_code
        self.defaults = function.func_defaults
        self.kwdefaults = function.func_kwdefaults
        self.name = function.func_name
        self.qualname = function.func_qualname
        # (Read from the object: reading ``f.__code__`` raises an audit event.)
        self.keep = (_object_or_none(self.code), _object_or_none(self.defaults),
                     _object_or_none(self.kwdefaults), _object_or_none(self.name),
                     _object_or_none(self.qualname))

    cdef void forget(self) except *:
        """Drop the target and what was recorded: the entry matches no
        function any more, and keeps its weak reference — freed with the
        entry later, never while a collection starts (which on 3.11 can be
        while the function's own weak references are being cleared, and
        freeing one of them then corrupts the interpreter)."""
        self.code = NULL
        self.target = None
        self.keep = None

    def __dealloc__(self):
        if self.on_death is not None:
            self.on_death.entry = NULL

    cdef inline bint matches(self, f) noexcept:
        cdef PyFunctionObject *function = <PyFunctionObject *>f
        return (function.func_code is self.code
                and function.func_defaults is self.defaults
                and function.func_kwdefaults is self.kwdefaults
                and function.func_name is self.name
                and function.func_qualname is self.qualname)


@cython.final
cdef class BoundCode:
    """A template's code bound to one runtime (``Runtime._bound_code``),
    shared by every function the runtime makes to run it.  When frames of
    the code can be suspended, it keeps weak references to those functions:
    each holds the code once, so any further reference is a frame that
    could run again (see ``Runtime._idle``)."""

    cdef object template
    cdef readonly object code
    cdef list functions     # of weak references; None: not tracked

    def __init__(self, template, code, bint tracked):
        self.template = template
        self.code = code
        self.functions = [] if tracked else None

    cdef object function_like(self, f):
        """A new function running this code with everything else of ``f``."""
        clone = cassette_function_running(self.code, f)
        if self.functions is not None:
            if len(self.functions) >= 64 and len(self.functions) & (len(self.functions) - 1) == 0:
                self._prune()
            self.functions.append(PyWeakref_NewRef(clone, None))
        return clone

    cdef Py_ssize_t _prune(self) except -1:
        """Drop the references to dead functions; how many are alive."""
        self.functions = [ref for ref in self.functions
                          if cassette_weakref_target(ref) != <PyObject *>None]
        return len(self.functions)

    cdef bint suspended(self) except -1:
        """Whether some frame of this code exists beyond the functions'
        references: running, suspended, or kept by a traceback."""
        cdef Py_ssize_t alive = self._prune()
        return cassette_refcount(<PyObject *>self.code) != 1 + alive


@cython.final
cdef class FunctionRecipe:
    """What a runtime calls for each function of one code object that
    nothing tells apart (``engine.function_recipe``): a new function running
    the bound code, hooked by ``plan`` when it is not None, then by each
    enclosing runtime's plan of ``enclosing``."""

    cdef object code          # the program's code (kept: the key is its address)
    cdef BoundCode bound
    cdef object plan
    cdef tuple enclosing
    cdef bint plain           # the target is the new function itself
    cdef bint suspendable     # a generator's, coroutine's or async generator's
    # Globals (a module's) for which ``callables.may_be_cached_weakly`` said
    # yes of a function of this code, or None: the part of its answer that
    # depends on the globals, asked once per globals (the rest, the
    # function's cells and defaults, is asked of each: ``_parts_inert``).
    cdef object weakly_cached_globals

    cdef object target_for(self, Runtime runtime, f):
        if self.plain:
            return self.bound.function_like(f)
        # Hooked: the hooks' wrapper refers to ``f`` and is made for the
        # call; the body is kept for ``f`` (``Runtime._weak_bodies``), so a
        # frame that outlives the call refers to what ``f`` keeps, as plainly.
        return _hooked_as(runtime, f, self.plan, self.enclosing, runtime._body_by(self, f))

    cdef bint may_be_cached_weakly(self, f) except -1:
        """``callables.may_be_cached_weakly(f)``, its globals' part asked
        once per globals."""
        if (<PyFunctionObject *>f).func_globals is <PyObject *>self.weakly_cached_globals:
            return _parts_inert(f)
        if not _cacheable_weakly(f):
            return False
        self.weakly_cached_globals = f.__globals__
        return True


cdef object _hooked_as(Runtime runtime, callee, plan, tuple enclosing, target):
    """``target`` hooked by ``plan`` (unless None), then by each ``(outer,
    plan)`` of ``enclosing``, as a recipe says (``engine.hooked_as``)."""
    if plan is not None:
        target = Hooked(runtime, callee, plan, target)
    for outer, outer_plan in enclosing:
        target = Hooked(<Runtime>outer, callee, outer_plan, target)
    return target


cdef object _resolve_entry(object runtime, object f):
    """The ``resolve`` slot's C function (``cassette_runtime_slot``): a call
    site's callee; a class's instantiation makes its object here
    (``Instantiation.for_call_site``)."""
    target = (<Runtime>runtime)._resolve(f)
    if type(target) is Instantiation:
        return (<Instantiation>target).for_call_site()
    return target


cdef object _method_site_entry(object site, object obj):
    """The ``method_of`` slot's C function (``cassette_runtime_slot``)."""
    return (<MethodSite>site).lookup(obj)


@cython.final
cdef class MethodSite:
    """The method lookup of the sites of one name, ``obj.name(…)``
    (``Slot(("method", name))``): the runtime's ``_method``, whose answers
    for the last few classes are kept while each class keeps its version
    and the instance holds no attribute of that name of its own — the
    checks the interpreter's own specialized method load makes."""

    cdef Runtime runtime
    cdef object name
    # Per class kept (not owned: its version tag tells it): that tag (0:
    # nothing kept), the method descriptor its MRO gives (in
    # ``descriptors``), where its instances keep attributes of their own.
    cdef PyTypeObject *classes[METHOD_SITE_CLASSES]
    cdef unsigned int versions[METHOD_SITE_CLASSES]
    cdef list descriptors
    cdef cassette_own_attributes own[METHOD_SITE_CLASSES]
    cdef int replaced                   # the entry a new class takes next

    cdef object lookup(self, obj):
        cdef PyTypeObject *tp = Py_TYPE(obj)
        cdef int i
        for i in range(METHOD_SITE_CLASSES):
            if self.classes[i] == tp:
                if (self.versions[i] != 0 and cassette_class_version(tp) == self.versions[i]
                        and not self.runtime._chain_tagging
                        and not cassette_may_hold_own(obj, self.name, &self.own[i])):
                    # Owned: resolving allocates, and forget_dynamic may
                    # empty the entry meanwhile (see Runtime._decide_resolution).
                    descriptor = <object>PyList_GET_ITEM(self.descriptors, i)
                    return self.runtime._resolve(descriptor)
                break
        return self._miss(obj, tp)

    cdef object _miss(self, obj, PyTypeObject *tp):
        cdef int i, entry = -1
        method = self.runtime._method(obj, self.name)
        for i in range(METHOD_SITE_CLASSES):
            if self.classes[i] == tp:
                entry = i
        if entry < 0:
            entry = self.replaced
            self.replaced = (entry + 1) % METHOD_SITE_CLASSES
        self.classes[entry] = tp
        self.versions[entry] = 0
        if self.runtime._chain_tagging:
            return method
        cdef PyObject *found = cassette_type_lookup(tp, self.name)
        if found is NULL or not PyType_HasFeature(Py_TYPE(<object>found),
                                                  Py_TPFLAGS_METHOD_DESCRIPTOR):
            return method
        cassette_learn_own_attributes(tp, self.name, &self.own[entry])
        if self.own[entry].known and not cassette_may_hold_own(obj, self.name, &self.own[entry]):
            if not self.runtime._retained:
                return method
            if self.descriptors is None:
                self.descriptors = [None] * METHOD_SITE_CLASSES
            self.descriptors[entry] = <object>found
            self.versions[entry] = cassette_class_version(tp)
            if not _class_lives(<object>tp):
                # The descriptor (a function of the class) may keep it alive.
                self.runtime._note_forgettable((self, entry, <object>tp), <object>tp)
            else:
                self.runtime._note_held((self, entry, <object>tp), <object>tp)
        return method

    cdef bint keeps(self, int entry, cls) noexcept:
        """Whether entry ``entry`` keeps a descriptor of ``cls``."""
        return self.classes[entry] == <PyTypeObject *>cls and self.versions[entry] != 0

    cdef void forget(self, int entry, cls) noexcept:
        """Forget what entry ``entry`` keeps, if it is still ``cls``'s."""
        if self.classes[entry] == <PyTypeObject *>cls:
            self.versions[entry] = 0
            self.descriptors[entry] = None


cdef inline object _address(object obj):
    """``id(obj)`` (the builtin would be called through the module's
    builtins and raise an audit event on every call)."""
    return PyLong_FromVoidPtr(<void *>obj)


cdef dict _library_files = callables._library_files


cdef inline bint _may_be_module_global(f):
    """False when ``f``, not a class, is certainly not stable for
    ``callables.is_stable``: its class is not hashed by identity, or it has
    no ``__name__`` a module global of its own name needs
    (``callables.is_module_global``)."""
    cdef PyTypeObject *tp = Py_TYPE(f)
    return cassette_hashed_by_identity(f) and not (
        cassette_instances_lack_own_attributes(tp)
        and cassette_type_lookup(tp, "__name__") is NULL)


cdef bint _lives_with_its_module(callee) except -1:
    """``callables.lives_with_its_module(callee)``, asked as cassette's own
    work: with frames lent, since the program may be at its recursion
    limit."""
    return cassette_own_call(_lives, callee, None, 1) is True


cdef bint _cacheable_weakly(f) except -1:
    """``callables.may_be_cached_weakly(f)``, asked as cassette's own work."""
    return cassette_own_call(_may_be_cached_weakly, f, None, 1) is True


cdef extern from "Python.h":
    PyObject *PyCell_GET(PyObject *)        # borrowed; NULL: empty


cdef object _is_inert = callables.is_inert


cdef inline bint _inert(PyObject *value) except -1:
    """``callables.is_inert(value)``: the common answers here, the rest
    asked as cassette's own work."""
    cdef PyTypeObject *tp
    if value is NULL or value == <PyObject *>None:
        return True
    tp = Py_TYPE(<object>value)
    if (tp == <PyTypeObject *>int or tp == <PyTypeObject *>str or tp == <PyTypeObject *>float
            or tp == <PyTypeObject *>bool or tp == <PyTypeObject *>bytes
            or tp == <PyTypeObject *>ModuleType):
        return True
    if PyType_Check(<object>value):
        return _class_lives(<object>value)
    if (tp == <PyTypeObject *>FunctionType or tp == <PyTypeObject *>BuiltinFunctionType
            or tp == <PyTypeObject *>complex):
        return cassette_own_call(_is_inert, <object>value, None, 1) is True
    return False


cdef bint _parts_inert(f) except -1:
    """What ``callables.may_be_cached_weakly(f)`` asks of function ``f``
    beyond its globals: its names are strings, and its cells, defaults and
    keyword defaults hold only inert values."""
    cdef PyFunctionObject *function = <PyFunctionObject *>f
    if (Py_TYPE(<object>function.func_name) != <PyTypeObject *>str
            or Py_TYPE(<object>function.func_qualname) != <PyTypeObject *>str):
        return False
    if function.func_closure is not NULL:
        for cell in <tuple>(<object>function.func_closure):
            if not _inert(PyCell_GET(<PyObject *>cell)):
                return False
    if function.func_defaults is not NULL:
        for value in <tuple>(<object>function.func_defaults):
            if not _inert(<PyObject *>value):
                return False
    if function.func_kwdefaults is not NULL:
        for value in (<dict>(<object>function.func_kwdefaults)).values():
            if not _inert(<PyObject *>value):
                return False
    return True


cdef bint _may_hold_library_entries(exception) except -1:
    """False when no entry of ``exception``'s traceback is cassette's own,
    as far as ``callables.is_library_code`` has answered for their files
    before (a file it has not seen: True)."""
    cdef PyObject *known
    tb = getattr(exception, "__traceback__", None)
    while tb is not None:
        known = PyDict_GetItemWithError(_library_files, tb.tb_frame.f_code.co_filename)
        if known is NULL or <object>known is not False:
            return True
        tb = tb.tb_next
    return False


@cython.final
cdef class Recent:
    """A callee resolved lately and what it resolved to (``Runtime._recent``):
    a callee ``_resolved`` holds, or a function ``_functions`` holds weakly:
    then its address (not owned: its entry is forgotten when it dies, and
    so matches no function again), ``callee`` None, and ``target`` None
    when it is the function itself."""

    cdef object callee, target
    cdef FunctionEntry entry      # None: not a function
    cdef PyObject *function


cdef inline object _object_or_none(PyObject *pointer):
    return <object>pointer if pointer is not NULL else None


@cython.final
cdef class PartialRecipe:
    """What a runtime calls for each ``functools.partial`` that no handler
    names (``engine.partial_recipe``): a partial of what the runtime calls
    for its function, with its arguments, hooked as a FunctionRecipe's
    target is."""

    cdef object plan
    cdef tuple enclosing

    def __init__(self, plan, tuple enclosing):
        self.plan = plan
        self.enclosing = enclosing

    cdef object target_for(self, Runtime runtime, p):
        return _hooked_as(runtime, p, self.plan, self.enclosing,
                          PyObject_Call(_partial_type, (runtime._resolve(p.func),)
                                        + <tuple>p.args, p.keywords))


@cython.final
cdef class Forget:
    """Weak-reference callback removing a dead function's cache entry
    (called by vectorcall: one is made and called for each function a
    program makes at run time and calls): ``entries[slot]`` of a list, or
    ``entries[key]`` of a dict — ``entry``, forgotten first, as ``_recent``
    may hold it too."""

    cdef void *vectorcall      # see cassette_enable_vectorcall
    cdef object entries
    cdef Py_ssize_t slot
    cdef object key
    cdef PyObject *entry       # not owned: the entry tells when it goes (NULL)

    def __call__(self, ref):
        self.forget(ref)

    cdef forget(self, ref):
        cdef PyObject *found
        if self.entry is not NULL:
            (<FunctionEntry>self.entry).forget()
        if type(self.entries) is dict:
            found = PyDict_GetItemWithError(self.entries, self.key)
            if found is not NULL and (<FunctionEntry>found).ref is ref:
                del (<dict>self.entries)[self.key]
            return
        entry = (<list>self.entries)[self.slot]
        if entry is not None and (<FunctionEntry>entry).ref is ref:
            (<list>self.entries)[self.slot] = None


cdef Forget _forget_entry(list entries, Py_ssize_t slot):
    """The callback emptying ``entries[slot]`` when its function dies."""
    cdef Forget forget = Forget.__new__(Forget)
    forget.entries = entries
    forget.slot = slot
    forget.vectorcall = <void *>_forget_vectorcall
    return forget


cdef Forget _forget_key(dict entries, key):
    """The callback removing ``entries[key]`` when its function dies."""
    cdef Forget forget = Forget.__new__(Forget)
    forget.entries = entries
    forget.key = key
    forget.vectorcall = <void *>_forget_vectorcall
    return forget


# How many resolutions (Runtime._resolve_miss) are in progress, in any
# runtime: forget_dynamic leaves the caches alone while one is.
cdef Py_ssize_t _resolving = 0


cdef inline object _weakly_held(f, target):
    """What an entry holding function ``f`` weakly answers, ``target``:
    None for ``f`` itself; a hooked target holds ``f`` until the call."""
    if target is None:
        return f
    if type(target) is Hooked:
        (<Hooked>target).pin(f)
    return target


cdef bint _still_kept(tuple noted) except -1:
    """Whether the entry a note of ``Runtime._held_young`` names is still
    kept (a cache emptied when full drops its entries, not their notes)."""
    holder = noted[0]
    if type(holder) is dict:
        return noted[1] in <dict>holder
    return (<MethodSite>holder).keeps(<int>noted[1], noted[2])


cdef object _forget_vectorcall(object forget, PyObject **args, size_t nargsf,
                               PyObject *kwnames):
    if kwnames is not NULL or PyVectorcall_NARGS(nargsf) != 1:
        return forget(*_positional(args, PyVectorcall_NARGS(nargsf)),
                      **_keywords(args, PyVectorcall_NARGS(nargsf), kwnames))
    (<Forget>forget).forget(<object>args[0])
    return None


@cython.final
cdef class Runtime:
    """Routes the operations of code rewritten for one context."""

    cdef readonly object ctx
    cdef readonly object parent
    cdef readonly object kinds
    cdef readonly tuple passes
    cdef tuple _ctx_types
    cdef Py_ssize_t _generation
    cdef object __weakref__        # (lifetimes notes a runtime weakly)
    # Targets of the stable callees (``_resolved``, by resolution key), of
    # functions and their rewritten bodies (``_functions``, ``_bodies``:
    # FunctionEntry, by the function's address, held weakly).
    cdef dict _resolved, _functions, _bodies, _slots, _droppers
    cdef dict _instance_calls     # class -> (its __call__, that function's code, not cassette's)
    # What ``_functions`` and ``_resolved`` answered last, by a hash of the
    # callee's address (Recent): most calls are answered here.
    cdef list _recent
    # Functions made at run time and called again (FunctionEntry, held
    # weakly), by a hash of their address.
    cdef list _transient
    # The entries kept for functions and classes the program can drop whose
    # targets may keep them alive — (cache, key, callee), (``_transient`` or
    # ``_weak_bodies``' list, slot, entry), or (MethodSite, index, class) —
    # forgotten when a collection starts (``forget_dynamic``,
    # ``cassette.lifetimes``): the young ones (callee not seen to survive a
    # collection) at every collection, the old ones at collections of the
    # older generations; the callees seen to survive one, weakly, by
    # address; whether the runtime is noted in ``lifetimes`` for that.
    # The entries kept for classes their module reaches — (cache, key,
    # class) or (MethodSite, index, class) — asked about again when a
    # collection starts, the young ones at every collection.
    cdef list _young, _old
    cdef list _held_young, _held_old
    cdef dict _survivors
    cdef bint _holds_dynamic
    # Bodies of functions the program can drop (FunctionEntry, held weakly),
    # by a hash of their address (see ``_rewritten``).
    cdef list _weak_bodies
    # Code bound here, by template (BoundCode); what calls functions of a
    # code object, by the code's address (FunctionRecipe, the code itself
    # when one function of it was seen, or _NO_RECIPE), and for
    # ``functools.partial`` objects; the callees handlers name ({id:
    # callee}, None when there are none); the functions last resolved by a
    # recipe (weakly).
    cdef dict _codes, _recipes
    cdef dict _named
    cdef object _unnamed_plan       # the plan of every callee _named lacks (None: not known yet)
    cdef object _partial_recipe     # PartialRecipe, _NO_RECIPE or None (not known yet)
    cdef list _seen_functions
    cdef OperationSite _next_site
    cdef bint _tagging
    cdef bint _chain_tagging
    cdef bint _checks_loss          # tagging, and its context's metadata_loss is not "drop"
    cdef bint _retained
    # Under tagging: the context's tag, its bindings cache and the cache's
    # entries.
    cdef object _tag
    cdef object _bindings
    cdef dict _entries
    # The records of lists and tuples found last in ``_entries``, and the
    # addresses found to have none, by address (see ``_record_of``); the
    # latter hold while the cache's count of additions is
    # ``_negatives_stamp``.
    cdef uintptr_t _recent_targets[RECENT_RECORDS]
    cdef list _recent_records
    cdef object _negatives_stamp
    # What tells whether another context may adopt this runtime (see
    # ``adopt``): runs in progress, live runtimes nested in this one (each
    # counts itself in the parent it holds in ``_counted_parent``), the
    # code bound here whose frames can be suspended (BoundCode), whether
    # code or the context itself was handed out, and whether the runtime
    # was ever released.
    cdef Py_ssize_t _depth
    cdef Py_ssize_t _children
    cdef PyObject *_counted_parent
    cdef list _suspendable
    cdef bint _handed_out
    cdef bint _released
    # How many contexts this runtime adopted: a propagation site remakes
    # its slow path when it has changed since it made it.
    cdef Py_ssize_t _adoptions
    # The steps whose iterator yielded EXHAUSTED itself, as (thread,
    # iterator), until the loop asks (``loop_ended``): almost always empty.
    cdef list _marker_values
    # The iterators give_iterator made for generator expressions not yet
    # started, as (thread, id) (take_iterator): almost always empty.
    cdef list _given_iterators

    def __init__(self, ctx, parent=None):
        self.ctx = ctx
        self.parent = parent
        self._marker_values = []
        self._given_iterators = []
        if parent is not None:
            (<Runtime>parent)._children += 1
            Py_INCREF(parent)
            self._counted_parent = <PyObject *>parent
        self._suspendable = []
        self._retained = True
        chain = [type(ctx)]
        outer = parent
        while outer is not None:
            chain.append(type(outer.ctx))
            outer = outer.parent
        self._ctx_types = tuple(chain)
        self._reset()

    def __dealloc__(self):
        if self._counted_parent is not NULL:
            (<Runtime>self._counted_parent)._children -= 1
            Py_DECREF(<object>self._counted_parent)
            self._counted_parent = NULL

    cdef _reset(self):
        self._generation = _generation
        self.kinds = engine.intercepted_kinds(self._ctx_types, engine.chain_has_tagging(self))
        self.passes = engine.context_passes(self)
        # Emptied, not only replaced: an entry held weakly is in a cycle
        # with its weak reference's callback (``Forget``), and what it
        # holds (bodies whose code refers to this runtime, which the
        # garbage collector cannot see) would otherwise wait for a
        # collection.
        if self._functions is not None:
            self._functions.clear()
            self._bodies.clear()
        self._resolved = {}
        self._functions = {}
        self._transient = [None] * TRANSIENT_ENTRIES
        self._recent = [None] * RECENT_CALLEES
        self._young = []
        self._old = []
        self._held_young = []
        self._held_old = []
        self._survivors = {}
        self._weak_bodies = [None] * TRANSIENT_ENTRIES
        self._bodies = {}
        self._instance_calls = {}
        self._codes = {}
        self._recipes = {}
        self._seen_functions = [None] * SEEN_FUNCTIONS
        self._slots = {}
        self._adoptions = 0
        self._droppers = {}
        self._next_site = None
        self._tag = getattr(self.ctx, "tag", None)
        self._tagging = self._tag is not None
        self._bindings = self.ctx.bindingscache if self._tagging else None
        self._entries = self._bindings.entries if self._tagging else None
        self._forget_recent_records()
        self._chain_tagging = engine.chain_has_tagging(self)
        self._checks_loss = self._tagging and checks_metadata_loss(type(self.ctx))
        self._named = engine.named_callees(self) or None
        self._unnamed_plan = None
        self._partial_recipe = None

    cdef void _forget_recent_records(self) noexcept:
        memset(self._recent_targets, 0, sizeof(self._recent_targets))
        self._recent_records = [None] * RECENT_RECORDS
        self._negatives_stamp = None

    cdef object _record_of(self, object target):
        """The record ``_entries`` keeps for ``target`` (by its address), or
        None.  Remembered here, by address: the records of lists and tuples
        found last (held strongly: their target cannot die while they are
        kept; a record held only here is one the bindings cache dropped
        because nothing else held its target, which the program thus cannot
        reach again), and the addresses found to have no record, until the
        cache adds one (``BindingsCache.additions``): most of the data a
        tagged run reads carries no metadata, and is asked about on every
        element read and write."""
        cdef uintptr_t address = <uintptr_t><void *>target
        cdef Py_ssize_t slot = cassette_address_slot(<void *>target, RECENT_RECORDS_BITS)
        cdef object stamp
        if self._recent_targets[slot] == address:
            record = self._recent_records[slot]
            if record is not None or _additions_of(self._bindings) is self._negatives_stamp:
                return record
        cdef PyObject *found = PyDict_GetItemWithError(self._entries, _address(target))
        if found is NULL:             # (an int key: no lookup error)
            stamp = _additions_of(self._bindings)
            if stamp is not self._negatives_stamp:
                self._forget_recent_records()
                self._negatives_stamp = stamp
            self._recent_targets[slot] = address
            self._recent_records[slot] = None
            return None
        record = <object>found
        if type(record) is not _record_type:
            _learn_record_type(type(record))
        if (_slot(record, _OFF_RECORD_WEAK, "weak") is False
                and _slot(record, _OFF_RECORD_TARGET, "target") is target):
            self._recent_targets[slot] = address
            self._recent_records[slot] = record
        elif self._recent_targets[slot] == address:
            self._recent_targets[slot] = 0      # no longer a known negative
        return record

    def release(self):
        """Drop every cache and keep nothing more until :meth:`retain`.
        Rewritten code refers to its runtime from its constants, which the
        garbage collector cannot see: while the runtime holds that code, the
        two keep each other (and the context) alive.  Released, a runtime
        lives as long as some code bound to it runs."""
        self._retained = False
        self._reset()
        # The code bound here refers to this runtime: kept, it would keep
        # it.  Without it, what runs it cannot be told: never adopted again.
        self._suspendable = []
        self._released = True

    def retain(self):
        """Cache again (the runtime is in use at top level)."""
        self._retained = True

    cdef inline void _keep(self, dict cache, key, value) except *:
        if self._retained:
            if len(cache) >= CACHE_MAX:
                cache.clear()
                if cache is self._functions or cache is self._resolved:
                    self._recent = [None] * RECENT_CALLEES
            cache[key] = value

    cdef void _note_dynamic(self, dict cache, key, callee) except *:
        """After ``_keep``: note the entry under ``key``, made for ``callee``,
        for ``forget_dynamic``: to forget when the program can drop
        ``callee`` (a class: entries of a function the program can drop are
        never kept in a dict, which would keep it alive), to ask about
        again when its module reaches it (``_note_held``)."""
        if not self._retained:
            return
        if not _lives_with_its_module(callee):
            self._note_forgettable((cache, key, callee), callee)
        else:
            self._note_held((cache, key, callee), callee)

    cdef void _note_held(self, tuple noted, callee) except *:
        """Note an entry kept for ``callee``, which its module reaches, if
        the module can drop it (a class, or a builtin bound to one): when a
        collection starts, ``forget_dynamic`` asks again."""
        cdef PyObject *tp
        if not PyType_Check(callee):
            if type(callee) is not BuiltinFunctionType and type(callee) is not _BuiltinCMethodType:
                return
            tp = PyCFunction_GET_SELF(callee)
            if tp is NULL or not PyType_Check(<object>tp):
                return
        else:
            tp = <PyObject *>callee
        if not PyType_HasFeature(<PyTypeObject *>tp, Py_TPFLAGS_HEAPTYPE):
            return
        if len(self._held_young) + len(self._held_old) >= 2 * CACHE_MAX:
            self._prune_held()
        self._held_young.append(noted)
        if not self._holds_dynamic:
            self._holds_dynamic = True
            cassette_own_call(_note_holder, self, None, 1)

    cdef void _prune_held(self) except *:
        """Drop the notes of entries no longer kept (their cache was
        emptied when full)."""
        self._held_young = [noted for noted in self._held_young if _still_kept(noted)]
        self._held_old = [noted for noted in self._held_old if _still_kept(noted)]

    cdef void _note_forgettable(self, tuple noted, callee) except *:
        """Note an entry kept for ``callee`` that may keep it alive, to be
        forgotten at the next collection, or at the next of the older
        generations once ``callee`` was seen to survive one.  ``noted`` is
        ``(holder, key, x)``: a function's entry in a list is noted by its
        weak reference, never by itself — the note must not keep the entry,
        and so the target and the cells it holds, alive after the function
        dies."""
        cdef PyObject *ref
        if len(self._young) + len(self._old) >= CACHE_MAX:     # no collection for long
            self._forget_now(True)
        ref = PyDict_GetItemWithError(self._survivors, _address(callee))
        if ref is not NULL and cassette_weakref_target(<object>ref) == <PyObject *>callee:
            self._old.append(noted)
        else:
            self._young.append(noted)
        if not self._holds_dynamic:
            self._holds_dynamic = True
            cassette_own_call(_note_holder, self, None, 1)

    def forget_dynamic(self, bint everything):
        """Drop the entries kept for functions and classes the program can
        drop whose targets may keep them alive: a garbage collection is
        starting, which must find the program's objects as unreachable as
        in a plain run (``cassette.lifetimes``) — of the youngest generation
        only, unless ``everything``: then the entries of callees seen to
        survive a collection go too.  Whether entries are left to forget.
        Nothing is forgotten while a resolution is in progress (the entries
        wait for the next collection)."""
        if _resolving:
            return True
        self._ask_about_held(everything)
        return self._forget_now(everything)

    cdef void _ask_about_held(self, bint everything) except *:
        """Forget the entries of the classes noted as held whose module no
        longer reaches them (all of them, or only those noted since the
        last collection); the others are old now."""
        cdef tuple noted
        asked, self._held_young = self._held_young, []
        if everything:
            asked.extend(self._held_old)
            self._held_old = []
        for noted in asked:
            if not _still_kept(noted):
                continue
            if _lives(noted[2]) is True:
                self._held_old.append(noted)
            else:
                self._forget_entry(noted)

    cdef bint _forget_now(self, bint everything) except -1:
        """``forget_dynamic``, whatever is in progress."""
        cdef tuple noted
        cdef Py_ssize_t slot
        cdef PyObject *found
        noted_entries, self._young = self._young, []
        if everything:
            noted_entries.extend(self._old)
            self._old = []
            if len(self._survivors) >= CACHE_MAX // 4:
                self._survivors = {key: ref for key, ref in self._survivors.items()
                                   if cassette_weakref_target(ref) != <PyObject *>None}
        for noted in noted_entries:
            if self._forget_entry(noted):
                self._note_survivor(<object>cassette_weakref_target(noted[2])
                                    if PyWeakref_CheckRef(noted[2]) else noted[2])
        self._holds_dynamic = (len(self._old) != 0 or len(self._held_young) != 0
                               or len(self._held_old) != 0)
        return self._holds_dynamic

    cdef bint _forget_entry(self, tuple noted) except -1:
        """Forget the entry ``noted`` names (see ``_young``); False when it
        was no longer there.  A function's entry, noted by its weak
        reference, is emptied, never freed (see ``FunctionEntry.forget``):
        it dies with the function, before any collection."""
        cdef PyObject *found
        cdef Py_ssize_t slot
        holder = noted[0]
        if PyWeakref_CheckRef(noted[2]):
            if type(holder) is dict:
                found = PyDict_GetItemWithError(<dict>holder, noted[1])
            else:
                found = PyList_GET_ITEM(<list>holder, <Py_ssize_t>noted[1])
            if found == NULL or found == <PyObject *>None or (
                    (<FunctionEntry>found).ref is not noted[2]):
                return False
            (<FunctionEntry>found).forget()
            return True
        if type(holder) is dict:
            (<dict>holder).pop(noted[1], None)
            callee = noted[2]
            # The last answer for it, if ``_recent`` has it.
            slot = cassette_address_slot(<void *>callee, RECENT_CALLEES_BITS)
            found = cassette_list_item(<PyObject *>self._recent, slot)
            if found != <PyObject *>None and (<Recent>found).callee is callee:
                self._recent[slot] = None
        else:
            (<MethodSite>holder).forget(<int>noted[1], noted[2])
        return True

    cdef void _note_survivor(self, callee) except *:
        """Remember (weakly) that ``callee``, whose entry a collection about
        to start made the runtime forget, existed before it: if it survives,
        it is no longer young."""
        if callee is None:
            return
        try:
            ref = PyWeakref_NewRef(callee, None)
        except TypeError:       # (a builtin bound to a class: made young again)
            return
        if len(self._survivors) >= CACHE_MAX:
            self._survivors.clear()
        self._survivors[_address(callee)] = ref

    cdef inline void _remember(self, Py_ssize_t slot, callee, target,
                               FunctionEntry entry) except *:
        """Note in ``_recent`` what ``_functions`` or ``_resolved`` answered."""
        cdef Recent recent
        if self._retained:
            recent = Recent.__new__(Recent)
            if entry is None:
                recent.callee = callee
            else:
                recent.function = <PyObject *>callee
            recent.target = target
            recent.entry = entry
            self._recent[slot] = recent

    # -- slots --------------------------------------------------------------

    def slot(self, name):
        """The callable bound into rewritten code for slot ``name``."""
        value = self._slots.get(name)
        if value is None:
            if name == "runtime":
                return self
            if name == "context":
                self._handed_out = True
                return self.ctx
            if name == "resolve":
                value = cassette_runtime_slot(CASSETTE_SLOT_RESOLVE, self)
            elif type(name) is tuple and (<tuple>name)[0] == "method":
                value = cassette_runtime_slot(CASSETTE_SLOT_METHOD_OF, self._method_site(name[1]))
            elif name in _STRUCTURAL:
                value = getattr(self, _STRUCTURAL[name])
            elif name in dispatch.TAGGING_SLOTS:
                value = cassette_propagation_slot(PropagationSite(self, name))
            else:
                value = cassette_operation_slot(OperationSite(self, name))
            self._slots[name] = value
        return value

    cdef object _plan_of(self, f):
        """``dispatch.plan`` for this context and ``f``: the plan every
        callee no handler names shares is kept here until the generation
        changes (``_named`` holds the callees handlers of this context, or
        of an enclosing one, name)."""
        if self._named is None or self._named.get(_address(f)) is not f:
            if self._unnamed_plan is None:
                self._unnamed_plan = cassette_own_call(_plan, type(self.ctx), f, 2)
            return self._unnamed_plan
        return cassette_own_call(_plan, type(self.ctx), f, 2)

    cdef MethodSite _method_site(self, name):
        cdef MethodSite site = MethodSite.__new__(MethodSite)
        site.runtime = self
        site.name = name
        return site

    def resolve(self, f):
        """What a call site calls instead of ``f``."""
        return self._resolve(f)

    cdef inline object _resolve(self, f):
        """What a call site calls instead of ``f``: the last answers are
        read from ``_recent`` here, the rest decided by ``_resolve_miss``."""
        cdef PyObject *found
        cdef PyObject *entry
        if self._generation == _generation:
            # (Borrowed throughout: no reference counting on the hit path.)
            found = cassette_list_item(<PyObject *>self._recent,
                                       cassette_address_slot(<void *>f, RECENT_CALLEES_BITS))
            if found != <PyObject *>None:
                entry = <PyObject *>(<Recent>found).entry
                if entry == <PyObject *>None:
                    if (<Recent>found).callee is f:
                        return (<Recent>found).target
                elif (<Recent>found).function == <PyObject *>f and (<FunctionEntry>entry).matches(f):
                    return _weakly_held(f, (<Recent>found).target)
        return self._resolve_miss(f)

    cdef object _resolve_miss(self, f):
        """``_resolve`` when ``_recent`` does not answer.  A collection that
        starts meanwhile (on 3.11 at any allocation: the resolution's frames
        hold entries as they read them) leaves the caches alone
        (``forget_dynamic``)."""
        global _resolving
        _resolving += 1
        try:
            return self._decide_resolution(f)
        finally:
            _resolving -= 1

    cdef object _decide_resolution(self, f):
        cdef PyObject *hit
        cdef Py_ssize_t slot
        cdef PyObject *descriptor
        if self._generation != _generation:
            self._reset()
        slot = cassette_address_slot(<void *>f, RECENT_CALLEES_BITS)
        tp = type(f)
        if tp is FunctionType:
            return self._resolve_function(f, slot)
        if tp is _partial_type:
            return self._resolve_partial(f)
        if tp is MethodType:
            # A bound method resolves as its function, bound again.
            function = PyMethod_GET_FUNCTION(f)
            inner = self._resolve(<object>function)
            if inner is <object>function:
                return f
            return PyMethod_New(inner, <object>PyMethod_GET_SELF(f))
        if (tp is type or tp is MethodDescriptorType or tp is WrapperDescriptorType
                or ((tp is BuiltinFunctionType or tp is _BuiltinCMethodType)
                    and not cassette_builtin_bound_to_instance(f))
                or cassette_class_hashed_as_type(f) or cassette_hashed_by_identity(f)):
            # (A builtin bound to an instance is never stable, never kept.)
            hit = PyDict_GetItemWithError(self._resolved, _resolved_key(f, tp))
            if hit is not NULL:
                # Owned before anything allocates: on 3.11 a collection (and
                # forget_dynamic, which drops such entries) can start at any
                # allocation.
                target = <object>hit
                self._remember(slot, f, target, None)
                return target
        if tp is BuiltinFunctionType or tp is MethodWrapperType or tp is _BuiltinCMethodType:
            # A builtin bound to an instance resolves as the descriptor found
            # on its class, bound again.
            if tp is not MethodWrapperType:
                descriptor = cassette_bound_builtin_descriptor(f, _builtin_name(f))
                if descriptor is not NULL:
                    inner = self._resolve(<object>descriptor)
                    if not cassette_builtin_bound_to_instance(f):
                        target = (f if inner is <object>descriptor
                                  else PyMethod_New(inner, <object>PyCFunction_GET_SELF(f)))
                        # Bound to a class: equal to every binding of it.
                        key = _resolved_key(f, tp)
                        self._keep(self._resolved, key, target)
                        self._note_dynamic(self._resolved, key, f)
                        return target
                    if inner is <object>descriptor:
                        return f
                    if (cassette_is_primitive(inner)
                            and cassette_primitive_target(inner) == descriptor):
                        # Nobody hooks the descriptor: the builtin as bound,
                        # its self routed as the descriptor's call would
                        # route it, one object fewer than a bound method.
                        cassette_route_one(PyCFunction_GET_SELF(f))
                        return cassette_primitive_new(f)
                    return PyMethod_New(inner, <object>PyCFunction_GET_SELF(f))
            elif (cassette_method_wrapper_self(f) is not <PyObject *>None
                    and type(<object>cassette_method_wrapper_self(f)) is not ModuleType):
                # (What callables.split_bound finds: the slot wrapper whose
                # binding it is.)
                descriptor = cassette_method_wrapper_descriptor(f)
                inner = self._resolve(<object>descriptor)
                if inner is <object>descriptor:
                    return f
                return PyMethod_New(inner, <object>cassette_method_wrapper_self(f))
            callee, owner = cassette_own_call(_split_bound, f, None, 1)
            if owner is not NO_SELF:
                inner = self._resolve(callee)
                if inner is callee:
                    return f
                return PyMethod_New(inner, owner)
        if (self.parent is None and PyType_HasFeature(<PyTypeObject *>tp, Py_TPFLAGS_HEAPTYPE)
                and not PyType_Check(f)):
            target = self._instance_call(f, tp)
            if target is not None:
                return target
        # A primitive nobody names: engine.target's answer is f itself, known
        # without asking it.
        known_primitive = (self.parent is None and not self._tagging and not PyType_Check(f)
                           and _instances_are_primitives(tp)
                           and self._plan_of(f) is EMPTY)
        target = f if known_primitive else cassette_own_call(engine.target, self, f, 2)
        if target is f and (known_primitive
                            or cassette_own_call(_is_frame_sensitive, f, None, 1) is not True):
            cassette_own_call(_route_callee, f, None, 1)
            target = cassette_primitive_new(f)
        if known_primitive and not _may_be_module_global(f):
            return target       # what callables.is_stable would say, known here
        if type(f) is type or cassette_own_call(_is_stable, f, None, 1) is True:
            # (a class: stable, known here)
            key = _resolved_key(f, tp)
            self._keep(self._resolved, key, target)
            self._note_dynamic(self._resolved, key, f)
        return target

    cdef object _instance_call(self, f, tp):
        """The target of ``f``, an instance of a Python class whose
        ``__call__`` is a function of the program, or None (engine.target
        decides).  The same as engine.target's (``engine.call_body``): that
        function's body bound to ``f``, hooked when ``f``'s plan is not
        empty.  An instance is not stable, but its class is: what the
        class's ``__call__`` is kept per class (``_instance_calls``)."""
        cdef PyObject *found = cassette_type_lookup(<PyTypeObject *>tp, "__call__")
        cdef PyFunctionObject *function
        if found is NULL or type(<object>found) is not FunctionType:
            return None
        function = <PyFunctionObject *>found
        entry = self._instance_calls.get(tp)
        if (entry is None or (<tuple>entry)[0] is not <object>found
                or (<tuple>entry)[1] is not <object>function.func_code):
            entry = (<object>found, <object>function.func_code,
                     cassette_own_call(_is_library_code, <object>function.func_code,
                                       None, 1) is not True)
            self._keep(self._instance_calls, tp, entry)
            self._note_dynamic(self._instance_calls, tp, tp)
        if not (<tuple>entry)[2]:
            return None
        body = PyMethod_New(self._rewritten(<object>found), f)
        plan = self._plan_of(f)
        if plan is EMPTY:
            return body
        return Hooked(self, f, plan, body)

    cdef object _resolve_function(self, f, Py_ssize_t recent_slot):
        """A Python function not in ``_recent`` (``recent_slot``: its slot
        there), found in the transient entries or ``_functions``, or
        decided here.  Functions made at run
        time — closures, lambdas, generator expressions, nested ``def`` —
        are new objects of code seen before: the code's recipe makes their
        target.  Those called more than once, and closures, are cached
        weakly: the entry dies with the function, so the cache never keeps
        the program's cells (and what they hold) alive; an entry whose
        target may keep the function alive itself
        (``callables.may_be_cached_weakly``) is also dropped when a garbage
        collection starts.  A hooked target refers to the function itself
        and is not cached.  The rest is decided by ``engine.target`` and
        cached as before, weakly too (functions without a closure that live
        with their module in ``_functions``, by address: ``_keep_weakly``;
        other ones in ``_transient``)."""
        cdef FunctionEntry entry
        cdef FunctionRecipe recipe
        cdef PyObject *hit
        cdef Py_ssize_t slot = cassette_address_slot(<void *>f, TRANSIENT_BITS)
        found = self._transient[slot]
        if found is not None:
            entry = <FunctionEntry>found
            if cassette_weakref_target(entry.ref) is <PyObject *>f and entry.matches(f):
                return entry.target
        if (<PyFunctionObject *>f).func_closure is NULL:
            hit = PyDict_GetItemWithError(self._functions, _address(f))
            if hit is not NULL:
                entry = <FunctionEntry>hit
                if cassette_weakref_target(entry.ref) == <PyObject *>f and entry.matches(f):
                    self._remember(recent_slot, f, entry.target, entry)
                    return _weakly_held(f, entry.target)
        recipe = self._recipe_for(f)
        if recipe is not None:
            target = recipe.target_for(self, f)
            # Most generator functions a program makes are called once
            # (generator expressions); other functions are cached at once.
            if recipe.plain and (not recipe.suspendable or self._seen_before(f)):
                self._keep_transient(slot, f, target, recipe.may_be_cached_weakly(f))
            return target
        target = cassette_own_call(engine.target, self, f, 2)
        if (<PyFunctionObject *>f).func_closure is NULL and _lives_with_its_module(f):
            self._keep_weakly(self._functions, f, target)
            if type(target) is Hooked:
                (<Hooked>target).pin(f)
        elif (target is not f and type(target) is FunctionType
                and target.__closure__ is f.__closure__):   # the rewritten body
            self._keep_transient(slot, f, target, _cacheable_weakly(f))
        self._learn_recipe(f)
        return target

    cdef object _resolve_partial(self, p):
        """A ``functools.partial`` (never cached: it holds the program's
        arguments): by the recipe of partials when it applies."""
        if self._named is not None and self._named.get(_address(p)) is p:
            return cassette_own_call(engine.target, self, p, 2)     # decided by itself
        recipe = self._partial_recipe
        if recipe is None:
            made = cassette_own_call(engine.partial_recipe, self, p, 2)
            recipe = self._partial_recipe = (_NO_RECIPE if made is None
                                              else PartialRecipe(*made))
        if recipe is _NO_RECIPE:
            return cassette_own_call(engine.target, self, p, 2)
        return (<PartialRecipe>recipe).target_for(self, p)

    cdef FunctionRecipe _recipe_for(self, f):
        """The recipe of ``f``'s code, when it applies to ``f``."""
        cdef PyFunctionObject *function = <PyFunctionObject *>f
        cdef PyObject *found
        if function.func_dict is not NULL and PyDict_Size(<object>function.func_dict):
            return None
        found = PyDict_GetItemWithError(self._recipes, PyLong_FromVoidPtr(function.func_code))
        if found is NULL or type(<object>found) is not FunctionRecipe:
            return None
        recipe = <FunctionRecipe>found          # owned (see _decide_resolution)
        if self._named is not None and self._named.get(_address(f)) is f:
            return None
        return recipe

    cdef _learn_recipe(self, f):
        """Note ``f``'s code; at the second function of it, make its recipe
        (a function seen once is usually a module's, called through
        ``_functions``)."""
        cdef FunctionRecipe recipe
        code = f.__code__
        key = PyLong_FromVoidPtr(<void *>code)
        found = self._recipes.get(key)
        if found is None:
            self._keep(self._recipes, key, code)
            return
        if found is not code:
            return
        made = cassette_own_call(engine.function_recipe, self, f, 2)
        if made is None:
            self._recipes[key] = _NO_RECIPE
            return
        template, plan, enclosing = made
        recipe = FunctionRecipe()
        recipe.code = code
        recipe.bound = self._bound_code(template)
        recipe.plan = plan
        recipe.enclosing = enclosing
        recipe.plain = plan is None and not enclosing
        recipe.suspendable = code.co_flags & SUSPENDABLE
        self._recipes[key] = recipe

    cdef bint _seen_before(self, f) except -1:
        """Whether ``f`` is among the functions last resolved by a recipe
        (noting it if not), which are held weakly: the addresses of the
        functions a loop makes are reused."""
        cdef Py_ssize_t slot = cassette_address_slot(<void *>f, SEEN_FUNCTIONS_BITS)
        ref = self._seen_functions[slot]
        if ref is not None and cassette_weakref_target(ref) is <PyObject *>f:
            return True
        self._seen_functions[slot] = PyWeakref_NewRef(f, None)
        return False

    cdef void _keep_weakly(self, dict cache, f, target) except *:
        """Keep ``target`` for function ``f``, which lives with its module,
        in ``cache`` by its address until ``f`` dies (the module may drop it)
        — or, unless ``callables.may_be_cached_weakly(f)`` (the target
        cannot keep ``f`` alive itself), until a collection starts."""
        cdef FunctionEntry entry
        if not self._retained:
            return
        key = _address(f)
        entry = FunctionEntry.__new__(FunctionEntry)
        entry.on_death = _forget_key(cache, key)
        entry.on_death.entry = <PyObject *>entry
        entry.ref = PyWeakref_NewRef(f, entry.on_death)
        entry.record(f)
        if target is f:
            target = None       # (the entry's None: the function itself)
        elif type(target) is Hooked:
            (<Hooked>target).weaken(f, entry.ref)
        entry.target = target
        self._keep(cache, key, entry)
        if not _cacheable_weakly(f):
            self._note_forgettable((cache, key, entry.ref), f)

    cdef _keep_transient(self, Py_ssize_t slot, f, target, bint weakly):
        """Keep ``target`` for ``f`` until ``f`` dies — or, unless
        ``weakly`` (``callables.may_be_cached_weakly``: the target cannot
        keep ``f`` alive itself), until a collection starts
        (``forget_dynamic``)."""
        cdef FunctionEntry entry
        if not self._retained:
            return
        entry = FunctionEntry.__new__(FunctionEntry)
        entry.ref = PyWeakref_NewRef(f, _forget_entry(self._transient, slot))
        entry.record(f)
        entry.target = target
        self._transient[slot] = entry
        if not weakly:
            self._note_forgettable((self._transient, slot, entry.ref), f)

    def method(self, obj, name):
        """For ``obj.name(…)``: M such that ``M(obj, …)`` makes the call."""
        return self._method(obj, name)

    cdef object _method(self, obj, name):
        cdef PyObject *found = NULL
        cdef int unbound
        if self._chain_tagging and _is_tagged(obj):
            method = engine.tagged_method(self, obj, name)
            if method is not None:
                return method
        cdef PyObject *descriptor
        unbound = cassette_get_method(obj, name, &found)
        attribute = <object>found
        Py_DECREF(attribute)
        if unbound:
            return self._resolve(attribute)
        # Where the lookup binds (3.13+), a method bound to ``obj`` is
        # called unbound, as the interpreter's method lookup would give it.
        tp = type(attribute)
        if tp is MethodType:
            if PyMethod_GET_SELF(attribute) is <PyObject *>obj:
                return self._resolve(<object>PyMethod_GET_FUNCTION(attribute))
        elif tp is MethodWrapperType:
            if (cassette_method_wrapper_self(attribute) is <PyObject *>obj
                    and type(obj) is not ModuleType):
                return self._resolve(<object>cassette_method_wrapper_descriptor(attribute))
        elif tp is BuiltinFunctionType or tp is _BuiltinCMethodType:
            descriptor = cassette_bound_builtin_descriptor(attribute, _builtin_name(attribute))
            if descriptor is not NULL and PyCFunction_GET_SELF(attribute) is <PyObject *>obj:
                return self._resolve(<object>descriptor)
        return self._dropper(self._resolve(attribute), attribute)

    def initialized(self, result, obj):
        """What a constructor returns (``rewrite.constructor_template``):
        ``obj`` when ``__init__`` returned ``result`` None."""
        _check_initialized(result)
        return obj

    def split(self, bound):
        """For 3.12's ``super().name(…)``: ``(self, M)`` such that
        ``M(self, …)`` makes the call."""
        tp = type(bound)
        if tp is MethodType:
            return bound.__self__, self._resolve(bound.__func__)
        if tp is MethodWrapperType:     # a C slot's: super().__init__()
            owner = <object>cassette_method_wrapper_self(bound)
            if owner is not None and type(owner) is not ModuleType:
                return owner, self._resolve(<object>cassette_method_wrapper_descriptor(bound))
        return None, self._dropper(self._resolve(bound), bound)

    def next_step(self, iterator):
        """One step of a ``for`` loop: the next value or EXHAUSTED."""
        return self._next_step(iterator)

    cdef object _next_step(self, iterator):
        # EXHAUSTED is in-band: a program can reach the object and an
        # iterator can yield it.  Such a step is noted (one comparison on
        # the hot path), and the rewritten loop asks ``loop_ended`` on the
        # branch where the step returned EXHAUSTED, so that only the
        # iterator's end ends the loop.
        cdef OperationSite site = self._next_site
        cdef PyObject *item
        cdef bint ended = False
        if site is None:
            site = self._next_site = OperationSite(self, "next")
        if site.refresh() or site.runs_directly(iterator):
            if not PyIter_Check(iterator):
                return _builtin_next(iterator)      # (its error)
            item = cassette_iter_next(iterator)
            if item is NULL:
                return self._exhausted(iterator)
            value = <object>item
            Py_DECREF(value)        # (the reference cassette_iter_next returned)
        else:
            try:
                value = site._call1(iterator)
            except StopIteration:
                # Nothing else here: a call would make Cython fetch the
                # exception and its traceback (a third of the step's cost).
                ended = True
            if ended:
                return self._exhausted(iterator)
        if value is _EXHAUSTED:
            self._marker_values.append((PyThread_get_thread_ident(), iterator))
        return value

    cdef inline object _exhausted(self, iterator):
        if self._marker_values:
            self._forget_marker_values(iterator)
        return _EXHAUSTED

    def give_iterator(self, iterable):
        """``iter(iterable)`` for the generator expression about to be
        called with it (3.15), noted in this thread for ``take_iterator``."""
        iterator = self.slot("iter")(iterable)
        # By id: a call abandoned before its prologue (an ``execute`` that
        # does not make it) must not keep the iterator alive.
        if len(self._given_iterators) >= GIVEN_ITERATORS_KEPT:
            del self._given_iterators[0]
        self._given_iterators.append((PyThread_get_thread_ident(), id(iterator)))
        return iterator

    def take_iterator(self, value):
        """A generator expression's prologue: ``value`` itself when
        ``give_iterator`` made it in this thread, else ``iter(value)`` as
        the plain prologue makes it (code called from ``gi_code``)."""
        cdef list noted = self._given_iterators
        if noted:
            step = (PyThread_get_thread_ident(), id(value))
            if step in noted:
                try:
                    noted.remove(step)
                except ValueError:      # another thread's give_iterator dropped it
                    pass
                return value
        return self.slot("iter")(value)

    def loop_ended(self, iterator):
        """After ``next_step`` returned EXHAUSTED for ``iterator`` in this
        thread: whether it found the iterator exhausted (False: the
        iterator yielded that object, the loop's value this time)."""
        return not (self._marker_values and self._forget_marker_values(iterator))

    cdef bint _forget_marker_values(self, iterator) except -1:
        """Forget the steps of ``iterator`` in this thread that returned
        EXHAUSTED as its value; whether there was one."""
        thread = PyThread_get_thread_ident()
        kept = [step for step in self._marker_values
                if step[0] != thread or step[1] is not iterator]
        found = len(kept) != len(self._marker_values)
        self._marker_values = kept
        return found

    def enter(self, manager):
        """``with manager``: ``(value of __enter__, exit callable)``."""
        return self._enter(manager, "__enter__", "__exit__", engine.native_with_error)

    def entry_of(self, manager):
        """``with manager`` where the layer calls the entry as a method
        (``Layer.enter_with``'s ``entry_slot``, 3.15): an object whose
        ``__enter__()`` is ``enter(manager)``."""
        cdef WithEntry entry = WithEntry.__new__(WithEntry)
        entry.runtime = self
        entry.manager = manager
        return entry

    def async_enter(self, manager):
        """``async with manager``: ``(awaitable of __aenter__, exit callable)``."""
        return self._enter(manager, "__aenter__", "__aexit__",
                           engine.native_async_with_error)

    cdef tuple _enter(self, manager, enter_name, exit_name, native_error):
        cdef PyTypeObject *tp = Py_TYPE(manager)
        cdef PyObject *found = cassette_type_lookup(tp, enter_name)
        enter = <object>found if found is not NULL else None
        found = cassette_type_lookup(tp, exit_name)
        exit_ = <object>found if found is not NULL else None
        if enter is None or exit_ is None:
            native_error(manager)
        value = self._call_special(enter, manager, ())
        return value, Exit(self, exit_, manager)

    def caught(self, exception):
        """At the entry of an exception handler of the program: the caught
        exception's traceback loses the library's entries — with frames lent
        for it: a handler runs at the depth where the program's recursion
        stopped, and it must not fail there for cassette's work."""
        if _may_hold_library_entries(exception):
            cassette_own_call(_remove_library_entries, exception, None, 1)

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
        if _is_frame_sensitive(callee):
            return callee
        return NotOverdubbed(self, callee)

    def call_special(self, descriptor, obj, /, *args):
        """Call a special method found on ``type(obj)`` as an operation."""
        return self._call_special(descriptor, obj, args)

    cdef object _call_special(self, descriptor, obj, tuple args):
        # By vectorcall: Cython's f(*args) enters the callee through its
        # tp_call, which counts a recursion level the program's own `with`
        # does not spend (3.11's Python limit, the C limit of 3.12+).
        if PyType_HasFeature(Py_TYPE(descriptor), Py_TPFLAGS_METHOD_DESCRIPTOR):
            return _call_tuple(self._resolve(descriptor), (obj,) + args, None)
        if hasattr(type(descriptor), "__get__"):
            descriptor = descriptor.__get__(obj, type(obj))
        return _call_tuple(self._resolve(descriptor), args, None)

    # -- what engine.target builds with ------------------------------------

    cdef object _dropper(self, target, callee):
        """A DropSelf of ``target``, the target of ``callee``; cached when
        ``callee`` is stable (its target is then the same object each
        time)."""
        key = _address(target)
        entry = self._droppers.get(key)
        if entry is not None and (<tuple>entry)[0] is target:
            return (<tuple>entry)[1]    # the entry keeps target: its id is not reused
        if (type(callee) is MethodType or type(callee) is FunctionType
                or (not PyType_Check(callee) and not _may_be_module_global(callee))
                or cassette_own_call(_is_stable, callee, None, 1) is not True):
            # (A function dies when the program drops it, from its module
            # too: kept here, even until the next collection, its target —
            # its defaults — would live on.  Asked first: nothing here may
            # cost the program a frame at each call.)
            return cassette_dropself_new(target)
        entry = (target, cassette_dropself_new(target))
        self._keep(self._droppers, key, entry)
        self._note_dynamic(self._droppers, key, callee)
        return (<tuple>entry)[1]

    def rewritten(self, function):
        """``function``'s body rewritten for this runtime (cached for
        functions without a closure)."""
        return self._rewritten(function)

    cdef object _rewritten(self, function):
        """The body of ``function``, cached weakly: in ``_bodies`` when it
        has no closure and lives with its module, else in ``_weak_bodies``,
        as ``_transient`` keeps targets."""
        cdef FunctionEntry entry
        cdef Py_ssize_t slot = cassette_address_slot(<void *>function, TRANSIENT_BITS)
        found = self._bodies.get(_address(function))
        if found is not None:
            entry = <FunctionEntry>found
            if (cassette_weakref_target(entry.ref) is <PyObject *>function
                    and entry.matches(function)):
                return entry.target
        found = self._weak_bodies[slot]
        if found is not None:
            entry = <FunctionEntry>found
            if (cassette_weakref_target(entry.ref) is <PyObject *>function
                    and entry.matches(function)):
                return entry.target
        template = cassette_own_call(engine.template_of, function, self, 2)
        body = self._bound_code(template).function_like(function)
        if function.__closure__ is None and _lives_with_its_module(function):
            self._keep_weakly(self._bodies, function, body)
        else:
            self._keep_body_weakly(slot, function, body, _cacheable_weakly(function))
        return body

    cdef object _body_by(self, FunctionRecipe recipe, f):
        """The body of ``f``, whose code ``recipe`` serves: kept weakly."""
        cdef FunctionEntry entry
        cdef Py_ssize_t slot = cassette_address_slot(<void *>f, TRANSIENT_BITS)
        found = self._weak_bodies[slot]
        if found is not None:
            entry = <FunctionEntry>found
            if cassette_weakref_target(entry.ref) is <PyObject *>f and entry.matches(f):
                return entry.target
        body = recipe.bound.function_like(f)
        self._keep_body_weakly(slot, f, body, recipe.may_be_cached_weakly(f))
        return body

    cdef void _keep_body_weakly(self, Py_ssize_t slot, function, body, bint weakly) except *:
        """Keep ``body`` for ``function`` in ``_weak_bodies`` until it dies
        — or, unless ``weakly``, until a collection starts."""
        cdef FunctionEntry entry
        if not self._retained:
            return
        entry = FunctionEntry()
        entry.record(function)
        entry.target = body
        entry.ref = PyWeakref_NewRef(function, _forget_entry(self._weak_bodies, slot))
        self._weak_bodies[slot] = entry
        if not weakly:
            self._note_forgettable((self._weak_bodies, slot, entry.ref), function)

    def bind(self, template, escapes=False):
        """``template``'s code with its slots bound to this runtime, the
        same object each time unless ``escapes`` (the code is handed to the
        user, which rules adoption out)."""
        if escapes:
            self._handed_out = True
            return self._bind_new(template)
        return self._bound_code(template).code

    cdef BoundCode _bound_code(self, template):
        cdef PyObject *found = PyDict_GetItemWithError(self._codes, template)
        cdef BoundCode bound
        if found is not NULL:
            return <BoundCode>found
        code = self._bind_new(template)
        # Code without slots is the template's own, bound to no runtime.
        bound = BoundCode(template, code,
                          code is not template.code and code.co_flags & SUSPENDABLE)
        if self._retained:
            self._keep(self._codes, template, bound)
            if bound.functions is not None:
                self._suspendable.append(bound)
        return bound

    cdef object _bind_new(self, template):
        code = template.bind(self.slot)
        loads = template.attribute_loads
        if loads:
            _watch_attribute_loads(code, loads)
        return code

    # -- adoption -----------------------------------------------------------

    cdef bint _idle(self):
        """Whether nothing can run code bound here: no run in progress, no
        nested runtime alive, nothing handed out, and no frame of code
        bound here that can be suspended (a generator's, a coroutine's)
        exists — the frames of other code run only inside a run."""
        cdef list kept = []
        cdef bint idle = True
        cdef BoundCode bound
        if self._depth or self._children or self._handed_out or self._released:
            return False
        for item in self._suspendable:
            bound = <BoundCode>item
            if bound.suspended():
                idle = False
            # Kept while a function runs it or a cache may hand it out.
            if bound.functions or self._codes.get(bound.template) is bound:
                kept.append(bound)
        self._suspendable = kept
        return idle

    def adopt(self, ctx):
        """Serve ``ctx`` from now on instead of this runtime's context, and
        return True, when ``ctx`` is a fresh context (no runtime yet) of the
        same class, pass and tagging as the current one, neither enclosed,
        and this runtime is idle (``_idle``).  Everything bound here stays:
        the rewritten code, its sites and their warmed-up caches — what a
        fresh runtime would spend most of a short run rebuilding.  The old
        context loses its runtime (it gets a new one if it runs again).

        The switch is made before any Python code runs, so another thread
        cannot see it half done; one that took this runtime from the old
        context just before is sent back by ``run``'s ``ctx`` check."""
        old = self.ctx
        if (ctx is old or type(ctx) is not type(old) or self.parent is not None
                or not self._retained):
            return False
        if PyObject_GenericGetAttr(ctx, "_runtime") is not None:
            return False
        if PyObject_GenericGetAttr(ctx, "pass_") is not PyObject_GenericGetAttr(old, "pass_"):
            return False
        tag = PyObject_GenericGetAttr(ctx, "tag")
        if (tag is None) != (self._tag is None) or not self._idle():
            return False
        self.ctx = ctx
        self._tag = tag
        self._bindings = (PyObject_GenericGetAttr(ctx, "bindingscache")
                          if tag is not None else None)
        self._entries = (PyObject_GenericGetAttr(self._bindings, "entries")
                         if tag is not None else None)
        self._forget_recent_records()
        PyObject_GenericSetAttr(old, "_runtime", None)
        PyObject_GenericSetAttr(ctx, "_runtime", self)
        # The propagation sites' slow paths hold a context: each remakes
        # its own when next needed (not a walk of every site here).
        self._adoptions += 1
        return True

    def instantiation(self, cls):
        """The body of calling class ``cls`` (as :func:`engine.instantiate`)."""
        cassette_own_call(_route_class, cls, None, 1)
        return Instantiation(self, cls)

    def array_function(self, dispatcher):
        """The body of numpy dispatcher ``dispatcher`` (as
        :func:`engine.call_array_function`)."""
        return ArrayFunction(self, dispatcher)

    def source_runner(self, evaluate):
        """The body of ``exec`` or ``eval`` (as :func:`engine.run_source`)."""
        return SourceRunner(self, evaluate)

    def hooked(self, callee, plan, body):
        return Hooked(self, callee, plan, body)

    def nested_overdub(self):
        return NestedOverdub(self)

    def call(self, f, /, *args, **kwargs):
        """Call ``f`` as an operation of this context."""
        return self.resolve(f)(*args, **kwargs)

    def run(self, f, args, kwargs, ctx=None):
        """Run ``f(*args, **kwargs)`` overdubbed (the entry's work).  ``ctx``:
        the context the caller took this runtime from; should another
        context have adopted it since (another thread), the run goes to
        ``ctx``'s own runtime instead."""
        self._depth += 1
        try:
            if ctx is not None and ctx is not self.ctx:
                from cassette.entry import runtime_of
                return runtime_of(ctx).run(f, args, kwargs, ctx)
            # The entry rewrites ``f`` without going through ``resolve``:
            # bring the intercepted kinds up to date first.
            if self._generation != _generation or not self._passes_current():
                self._reset()
            if not _routing_current():
                routing.route_new_classes()
            body = self._known_entry_body(f)
            if body is not None:
                return body(*args, **kwargs) if kwargs else body(*args)
            return engine.run(self, f, args, kwargs)
        finally:
            self._depth -= 1

    cdef inline bint _passes_current(self):
        """Whether ``self.passes`` is ``engine.context_passes(self)``,
        decided without the call for a context without a pass at top
        level (the common case)."""
        if (self.parent is None and not self.passes
                and PyObject_GenericGetAttr(self.ctx, "pass_") is _NoPass):
            return True
        return self.passes == engine.context_passes(self)

    cdef object _known_entry_body(self, f):
        """What ``engine.run`` calls for ``f`` when ``engine.decide``
        has its decision cached (a plain function no handler can match,
        in ``engine._decisions``, read as ``decide`` reads it): the body
        rewritten for this runtime.  Else None: ``engine.run`` decides."""
        if type(f) is not FunctionType:
            return None
        known = _entry_decisions.get(id(f))
        if known is None:
            return None
        ref, code, ctx_type_ref, generation, body_kind = <tuple>known
        if (ref() is f and code is (<object>f).__code__ and ctx_type_ref() is type(self.ctx)
                and generation == dispatch._generation and body_kind == callables.FUNCTION):
            return self._rewritten(f)
        return None

    # -- the protocol -------------------------------------------------------

    cdef object invoke(self, handler, a, b, c, d, int nprefix, tuple args, dict kwargs):
        """Call a handler, ``handler(a, b[, c[, d]], *args, **kwargs)``
        (``nprefix``: 0, 2, 3 or 4 of ``a, b, c, d``); under a nested
        overdub the enclosing context intercepts it like any other code.
        While it runs, the handler is noted as the one being called (its
        first frame is its own, not the program's) and the running frame is
        the barrier: calls the interpreter makes before the handler has a
        frame of its own — the handler itself, when it is a routed function,
        or whatever a handler written in C calls — are the handler's, not
        the program's (``cassette_handler_call``)."""
        cdef PyObject *stack[12]
        cdef Py_ssize_t n = len(args)
        cdef Py_ssize_t i
        if self.parent is not None:
            handler = self.parent.resolve(handler)
        if n + nprefix > 12:
            whole = (a, b, c, d)[:nprefix] + args
            return cassette_handler_call(<PyObject *>handler, PySequence_Fast_ITEMS(whole), len(whole),
                                         <PyObject *>kwargs if kwargs else NULL)
        stack[0] = <PyObject *>a
        stack[1] = <PyObject *>b
        stack[2] = <PyObject *>c
        stack[3] = <PyObject *>d
        for i in range(n):
            stack[nprefix + i] = <PyObject *>args[i]
        return cassette_handler_call(<PyObject *>handler, stack, nprefix + n,
                                     <PyObject *>kwargs if kwargs else NULL)

    def tagged_primitive(self, callee, primitive):
        """What calls of primitive ``callee`` (made by calling ``primitive``)
        become under tagging (see :class:`TaggedPrimitive`)."""
        # A vectorcall object calling a fast-call method: no recursion level
        # of its own (a callable object would cost one per call on 3.11,
        # and a C level on 3.13), named like the primitive.
        tagged = TaggedPrimitive(self, callee, primitive)
        return cassette_primitive_named(tagged, callee)

    cdef object primitive(self, callee, f, tuple args, dict kwargs):
        """The default fallback: ``f`` called with untagged arguments (which
        are routed first: the primitive may call back into them); under
        tagging, metadata propagates through it (``callee``: what hooks
        see)."""
        for arg in args:
            cassette_route_one(<PyObject *>arg)
        if kwargs:
            for arg in kwargs.values():
                cassette_route_one(<PyObject *>arg)
        if self.parent is not None:
            f = self.parent.resolve(f)
        if self._tagging:
            return _call_tagged(self, _propagator_of(callee), callee, f, args, kwargs)
        return cassette_primitive_call_tuple(f, args, kwargs)
