# What rewritten code calls: hooked callees, instantiations, `with` exits,
# nested overdubs and the operation sites of operators and loops.
#
# Part of cassette/_core.pyx (included there; see its map).

cdef object _constructor_template = engine.constructor_template

@cython.final
cdef class NotOverdubbed:
    """A callee a pass marked ``nooverdub``: called as a handler is."""

    cdef Runtime runtime
    cdef readonly object callee

    def __init__(self, Runtime runtime, callee):
        self.runtime = runtime
        self.callee = callee

    def __call__(self, *args, **kwargs):
        return self.runtime.invoke(self.callee, None, None, None, None, 0, args, kwargs)

    def __repr__(self):
        return f"<not overdubbed {self.callee!r}>"


cdef inline Protocol _compiled(plan):
    """The :class:`Protocol` of ``plan``, made once (``Plan.compiled``):
    a function the program makes per call is hooked anew at each call."""
    protocol = plan.compiled
    if protocol is None:
        protocol = plan.compiled = cassette_own_call(Protocol, plan, None, 1)
    return <Protocol>protocol


cdef inline bint _heap_class(tp) noexcept:
    return PyType_Check(tp) and PyType_HasFeature(<PyTypeObject *>tp, Py_TPFLAGS_HEAPTYPE)


# Weak references to the operation sites and protocol choices whose copies
# of selections (``handler_cache``, ``Choice.cache``) hold a class of the
# program; and those let go at a collection, freed later (never while one
# starts: see cassette.lifetimes).
cdef list _class_copies = []
cdef list _class_copies_dropped = []


cdef void _note_class_copy(copier) except *:
    del _class_copies_dropped[:]
    _class_copies.append(PyWeakref_NewRef(copier, None))


def _forget_class_copies():
    """``dispatch.held_selections`` forgot selections of classes a module
    dropped: the copies go too (a collection is starting)."""
    global _class_copies
    for ref in _class_copies:
        copier = <object>cassette_weakref_target(ref)
        if type(copier) is OperationSite:
            (<OperationSite>copier).handler_cache = ()
            (<OperationSite>copier).copies_classes = False
        elif type(copier) is Choice:
            (<Choice>copier).cache = ()
            (<Choice>copier).copies_classes = False
    _class_copies_dropped.extend(_class_copies)
    _class_copies = []


dispatch.held_selections.listeners.append(_forget_class_copies)


@cython.final
cdef class Hooked:
    """A callee with handlers: calling it runs the protocol of reference §3.2.
    Once the hooked target is cached for a function (``weaken``), the
    function is held weakly — the cache must not keep it alive: the program
    may drop it, from its module too — except between its resolution and
    its call (``pin``): a call site replaces the callee with its target,
    and the function may be a temporary (a generator expression's) that
    nothing else holds meanwhile."""

    cdef void *vectorcall      # see cassette_enable_vectorcall
    cdef Runtime runtime
    cdef object strong_callee      # weakened: the pinned callee, or None
    cdef object callee_ref         # None, or (weakened) a weak reference to the callee
    cdef object body
    cdef Protocol protocol

    def __init__(self, Runtime runtime, callee, plan, body):
        self.runtime = runtime
        self.strong_callee = callee
        self.body = body
        self.protocol = _compiled(plan)
        self.vectorcall = <void *>cassette_holding_vectorcall     # then _hooked_vectorcall

    @property
    def callee(self):
        return self._peek()

    cdef inline object _peek(self):
        """The callee."""
        cdef PyObject *found
        if self.callee_ref is None or self.strong_callee is not None:
            return self.strong_callee
        found = cassette_weakref_target(self.callee_ref)
        if found == <PyObject *>None:
            raise ReferenceError("cassette: a hooked function was called after it died")
        return <object>found

    cdef inline object _callee(self):
        """The callee, for a call: unpinned."""
        callee = self._peek()
        if self.callee_ref is not None:
            self.strong_callee = None
        return callee

    cdef inline void pin(self, callee) noexcept:
        """Hold ``callee`` (resolved to this target) until the call."""
        if self.callee_ref is not None:
            self.strong_callee = callee

    cdef void weaken(self, callee, ref) noexcept:
        """Hold ``callee`` by ``ref``, a weak reference to it, in this
        target and in the targets it wraps."""
        layer = self
        while type(layer) is Hooked:
            if (<Hooked>layer).callee_ref is None and (<Hooked>layer).strong_callee is callee:
                (<Hooked>layer).strong_callee = None
                (<Hooked>layer).callee_ref = ref
            layer = (<Hooked>layer).body

    def __call__(self, *args, **kwargs):
        callee = self._callee()
        return self.protocol.run(self.runtime, callee, self.body, callee, args, kwargs)

    # The callee's names: the interpreter's messages that name a callable
    # (``f() argument after * must be an iterable``) name the callee.
    @property
    def __qualname__(self):
        return self._peek().__qualname__

    @property
    def __module__(self):
        return self._peek().__module__

    def __str__(self):
        # Used by those messages when the callee has no __qualname__
        # (``None argument after * must be an iterable``).
        return str(self._peek())


cdef object _hooked_vectorcall(object hooked, PyObject **args, size_t nargsf,
                               PyObject *kwnames):
    cdef Hooked self = <Hooked>hooked
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    cdef Runtime runtime = self.runtime
    callee = self._callee()
    if (self.protocol.watching and kwnames is NULL and nargs <= 9
            and runtime.parent is None and not runtime._tagging):
        return self.protocol.run_vector(runtime, callee, self.body, callee, NULL,
                                        args, nargs)
    return self.protocol.run(self.runtime, callee, self.body, callee,
                             _positional(args, nargs), _keywords(args, nargs, kwnames))


@cython.final
cdef class Instantiation:
    """``type.__call__(cls, …)`` with ``__new__`` and ``__init__`` each an
    operation: the same steps as :func:`cassette.engine.instantiate`."""

    cdef void *vectorcall      # see cassette_enable_vectorcall
    cdef Runtime runtime
    cdef object cls
    # What a call site calls instead (``for_call_site``): the class's
    # ``__init__`` as a constructor (``engine.constructor_template``), made
    # for the function ``init`` recorded in ``init_entry``, valid while the
    # class keeps ``version``.  ``constructor`` None: not learned yet
    # (``learned`` counts the attempts), or False: none applies.
    cdef object constructor, init
    cdef FunctionEntry init_entry
    cdef unsigned int version
    cdef int learned

    def __init__(self, Runtime runtime, cls):
        self.runtime = runtime
        self.cls = cls
        self.vectorcall = <void *>_instantiation_vectorcall

    cdef object for_call_site(self):
        """What a call site of the class calls: a new object bound to the
        constructor — the object ``__new__`` made, the call then running
        ``__init__``'s body in the caller's evaluation loop, as the
        interpreter's own instantiation does from 3.13 on — or else this
        instantiation.  The constructor serves while the class keeps its
        version (its ``__new__`` and ``__init__``) and ``__init__`` its code,
        defaults and names; object's ``__new__``, which ignores the
        arguments, makes the object as ``call_positional`` does."""
        cls = self.cls
        if self.constructor is None:
            self._learn_constructor()
        if (self.constructor is False
                or cassette_class_version(<PyTypeObject *>cls) != self.version
                or not self.init_entry.matches(self.init)):
            if self.constructor is not False and self.learned < _CONSTRUCTOR_ATTEMPTS:
                self.constructor = None     # the class changed: learn again
            return self
        constructor = self.constructor      # (owned: allocating may run a finalizer)
        cassette_route_one(<PyObject *>cls)
        return PyMethod_New(constructor, cassette_object_new(cls))

    cdef _learn_constructor(self):
        cdef PyObject *found
        cdef Runtime runtime = self.runtime
        cls = self.cls
        self.learned += 1
        self.constructor = False
        if (runtime.parent is not None or runtime._tagging or runtime._chain_tagging
                or type(cls) is not type):
            return
        version = cassette_class_version(<PyTypeObject *>cls)
        if version == 0 or not _is_plain_object_new(self._special(cls, "__new__"), cls, 1):
            return
        found = cassette_type_lookup(<PyTypeObject *>cls, "__init__")
        if found is NULL or type(<object>found) is not FunctionType:
            return
        init = <object>found
        body = runtime._resolve(init)
        if type(body) is not FunctionType or body is init:
            return      # hooked, or not rewritten
        template = cassette_own_call(_constructor_template, runtime, init, 2)
        if template is None:
            return
        self.init = init
        self.init_entry = FunctionEntry()
        self.init_entry.record(init)
        self.version = version
        self.constructor = runtime._bound_code(template).function_like(init)

    def __call__(self, *args, **kwargs):
        return self.call(args, kwargs)

    cdef object call(self, tuple args, dict kwargs):
        cls = self.cls
        obj = _call_tuple(self.runtime._resolve(cls.__new__), (cls,) + args, kwargs)
        # PyObject_TypeCheck, as type.__call__: no __instancecheck__, no __class__.
        if PyObject_TypeCheck(obj, <PyTypeObject *>cls):
            initialized = _call_tuple(self.runtime._resolve(type(obj).__init__),
                                      (obj,) + args, kwargs)
            _check_initialized(initialized)
        return obj

    cdef object call_positional(self, PyObject **args, Py_ssize_t nargs):
        """``call`` for positional arguments only, laid out on the C stack
        with the class, then the new object, first (``nargs`` < 12).  The
        arguments are held while ``__new__`` and ``__init__`` run (see
        ``cassette_holding_vectorcall``)."""
        cdef PyObject *stack[12]
        cdef Py_ssize_t i
        cdef tuple held = _positional(args, nargs)
        args = PySequence_Fast_ITEMS(held)
        cls = self.cls
        new = self._special(cls, "__new__")
        if _is_plain_object_new(new, cls, nargs):
            # Nobody hooks object.__new__, and it does nothing with the
            # arguments: made as type.__call__ makes it.
            cassette_route_one(<PyObject *>cls)
            obj = cassette_object_new(cls)
        else:
            for i in range(nargs):
                stack[i + 1] = args[i]
            stack[0] = <PyObject *>cls
            obj = PyObject_Vectorcall(new, stack, nargs + 1, NULL)
        if PyObject_TypeCheck(obj, <PyTypeObject *>cls):
            for i in range(nargs):
                stack[i + 1] = args[i]
            stack[0] = <PyObject *>obj
            initialized = PyObject_Vectorcall(self._special(type(obj), "__init__"),
                                              stack, nargs + 1, NULL)
            _check_initialized(initialized)
        return obj

    cdef inline object _special(self, cls, name):
        """What a call site calls for ``cls.<name>`` (``__new__`` or
        ``__init__``): read from the class's MRO when its metaclass is
        ``type`` and what is found there is its own value as an attribute
        of the class (a function, a builtin, a slot wrapper; a
        staticmethod's function), else by getattr."""
        cdef PyObject *found
        if type(cls) is type:
            found = cassette_type_lookup(<PyTypeObject *>cls, name)
            if found is not NULL:
                kind = type(<object>found)
                if (kind is FunctionType or kind is BuiltinFunctionType
                        or kind is WrapperDescriptorType):
                    return self.runtime._resolve(<object>found)
                if kind is staticmethod:
                    return self.runtime._resolve((<object>found).__func__)
        return self.runtime._resolve(getattr(cls, name))


cdef inline bint _is_plain_object_new(new, cls, Py_ssize_t nargs):
    """Whether ``new``, what a call site calls for ``cls.__new__``, is
    ``object.__new__`` that nobody hooks and that does nothing with
    ``nargs`` arguments: the object is then made as ``type.__call__``
    makes it."""
    return (cassette_is_primitive(new)
            and cassette_primitive_target(new) == <PyObject *>_object_new
            and cassette_object_new_ignores(cls, nargs))


#: How often an instantiation learns its constructor again after its class
#: changed, before it keeps calling ``__init__`` from C.
cdef int _CONSTRUCTOR_ATTEMPTS = 8


cdef inline _check_initialized(initialized):
    if initialized is not None:
        raise TypeError(
            f"__init__() should return None, not '{type(initialized).__name__}'")


cdef object _instantiation_vectorcall(object instantiation, PyObject **args, size_t nargsf,
                                      PyObject *kwnames):
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    if kwnames is NULL and nargs < 12:
        return (<Instantiation>instantiation).call_positional(args, nargs)
    return (<Instantiation>instantiation).call(_positional(args, nargs),
                                               _keywords(args, nargs, kwnames))




@cython.final
cdef class ArrayFunction:
    """The body of a numpy dispatcher (``engine.call_array_function``): its
    relevant-arguments function overdubbed, then, when every relevant
    argument is an ndarray or of one of Python's basic types (which cannot
    override ``__array_function__``), its implementation overdubbed.  Any
    other case is ``engine.array_function_with``'s."""

    cdef void *vectorcall      # see cassette_enable_vectorcall
    cdef Runtime runtime
    cdef object dispatcher, relevant

    def __init__(self, Runtime runtime, dispatcher):
        self.runtime = runtime
        self.dispatcher = dispatcher
        self.relevant = callables.array_function_relevant(dispatcher)
        self.vectorcall = <void *>_array_function_vectorcall

    def __call__(self, *args, **kwargs):
        return self.call(args, kwargs)

    cdef object call(self, tuple args, dict kwargs):
        cdef Runtime runtime = self.runtime
        found = None
        if self.relevant is not None:
            try:
                found = tuple(_call_tuple(runtime._rewritten(self.relevant), args, kwargs))
            except TypeError:
                found = None
            if found is not None and _no_array_function_override(found):
                return _call_tuple(runtime._rewritten(self.dispatcher._implementation),
                                   args, kwargs)
        return engine.array_function_with(runtime, self.dispatcher, found, args, kwargs)


@cython.final
cdef class SourceRunner:
    """The body of ``exec`` or ``eval`` (``engine.run_source``), calling the
    builtin from C: no frame of cassette's stands between the code it runs
    and the code that called it, so that a warning's ``stacklevel``, which
    counts frames, names the frame it names plainly (a deprecated module's
    warning names its importer)."""

    cdef Runtime runtime
    cdef object evaluate

    def __init__(self, Runtime runtime, evaluate):
        self.runtime = runtime
        self.evaluate = evaluate

    def __call__(self, *args, **kwargs):
        call_args, call_kwargs, module = _source_call(self.runtime, self.evaluate, args, kwargs)
        result = self.evaluate(*call_args, **call_kwargs)
        if module is not None:
            _route_module(module)
        return result


cdef object _source_call = engine.source_call
cdef object _route_module = routing.route_module


cdef frozenset _NO_ARRAY_FUNCTION = engine.NO_ARRAY_FUNCTION
cdef object _ndarray = None
cdef object _ndarray_array_function = None


cdef bint _no_array_function_override(tuple values) except -1:
    """Whether no class of ``values`` defines an ``__array_function__`` other
    than ndarray's (``engine._overrides_array_function`` for untagged
    values; a tagged one: False, the engine decides)."""
    global _ndarray, _ndarray_array_function
    cdef PyObject *found
    if _ndarray is None:
        _ndarray = _sys_modules["numpy"].ndarray
        _ndarray_array_function = _ndarray.__dict__["__array_function__"]
    for value in values:
        kind = type(value)
        if kind is _ndarray or kind in _NO_ARRAY_FUNCTION:
            continue
        if _is_tagged(value):
            return False
        found = cassette_type_lookup(<PyTypeObject *>kind, "__array_function__")
        if found is not NULL and <object>found is not _ndarray_array_function:
            return False
    return True


cdef object _array_function_vectorcall(object function, PyObject **args, size_t nargsf,
                                       PyObject *kwnames):
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    return (<ArrayFunction>function).call(
        _positional(args, nargs), None if kwnames is NULL else _keywords(args, nargs, kwnames))


@cython.final
cdef class Exit:
    """The ``__exit__`` callable a rewritten ``with`` pushes."""

    cdef void *vectorcall      # see cassette_enable_vectorcall
    cdef Runtime runtime
    cdef object method, manager

    def __init__(self, Runtime runtime, method, manager):
        self.runtime = runtime
        self.method = method
        self.manager = manager
        self.vectorcall = <void *>_exit_vectorcall

    def __call__(self, exc_type, exc_value, traceback):
        return self.runtime._call_special(
            self.method, self.manager, (exc_type, exc_value, traceback))


@cython.final
cdef class WithEntry:
    """What a rewritten ``with`` enters on 3.15 (``Runtime.entry_of``):
    its ``__enter__`` — a C method, called straight after the
    ``LOAD_SPECIAL`` that loads it, where 3.15 takes no interrupt — makes
    the entry of the manager, so an interrupt arriving during the manager's
    own ``__enter__`` is taken inside the block, as plainly."""

    cdef Runtime runtime
    cdef object manager

    def __enter__(self):
        manager = self.manager
        self.manager = None
        return self.runtime.enter(manager)


cdef object _exit_vectorcall(object exit_, PyObject **args, size_t nargsf, PyObject *kwnames):
    cdef Exit self = <Exit>exit_
    if kwnames is not NULL or PyVectorcall_NARGS(nargsf) != 3:
        return self(*_positional(args, PyVectorcall_NARGS(nargsf)),
                    **_keywords(args, PyVectorcall_NARGS(nargsf), kwnames))
    return self.runtime._call_special(self.method, self.manager,
                                      (<object>args[0], <object>args[1], <object>args[2]))


cdef void _enable_vectorcalls():
    """Hooked, Instantiation, Exit and Forget objects are called by vectorcall (see
    cassette_enable_vectorcall): their ``vectorcall`` field's offset."""
    cdef Hooked hooked = Hooked.__new__(Hooked)
    cdef Instantiation instantiation = Instantiation.__new__(Instantiation)
    cdef Exit exit_ = Exit.__new__(Exit)
    cassette_enable_vectorcall(
        Hooked, <char *>&hooked.vectorcall - <char *><PyObject *>hooked)
    cassette_enable_vectorcall(
        Instantiation, <char *>&instantiation.vectorcall - <char *><PyObject *>instantiation)
    cassette_enable_vectorcall(Exit, <char *>&exit_.vectorcall - <char *><PyObject *>exit_)
    cdef ArrayFunction array_function = ArrayFunction.__new__(ArrayFunction)
    cassette_enable_vectorcall(
        ArrayFunction, <char *>&array_function.vectorcall - <char *><PyObject *>array_function)
    cdef Forget forget = Forget.__new__(Forget)
    cassette_enable_vectorcall(Forget, <char *>&forget.vectorcall - <char *><PyObject *>forget)




@cython.final
cdef class NestedOverdub:
    """The body of ``cassette.overdub`` called from overdubbed code: the
    inner run, whose handlers the enclosing runtime intercepts."""

    cdef Runtime parent

    def __init__(self, Runtime parent):
        self.parent = parent

    def __call__(self, ctx, f, *args, **kwargs):
        engine.check_arguments(ctx, f)
        runtime = Runtime(ctx, self.parent)
        try:
            return runtime.run(f, args, kwargs)
        finally:
            runtime.release()


@cython.final
cdef class OperationSite:
    """The slot of one operation kind (``add``, ``getattr`` …)."""

    cdef Runtime runtime
    cdef object callee, implementation, name
    cdef int arrangement
    cdef bint negate
    cdef Protocol protocol
    cdef Py_ssize_t generation
    # Under tagging, with no enclosing runtime, no hook and no handler but
    # execute handlers chosen by argument types (``execute_by_types``, the
    # selector's cache; None when there are none): see ``unhooked``.
    cdef bint unhooked_tagging
    cdef dict execute_by_types
    cdef bint is_getitem, is_setitem
    # The one handler when it is an ``execute`` handler for any arguments
    # and no hook or other handler exists (the shape of a tagging tool's
    # rules): called without the protocol's generic path.
    cdef object execute_only
    # No hook and no handler but ``execute`` handlers chosen by argument
    # types: the one the selector's cache names is called the same way.
    cdef bint execute_selected
    # What ``execute_by_types`` answered for the operand types this site
    # has seen, most recent first: see ``_handler_for``.
    cdef tuple handler_cache
    cdef bint copies_classes     # noted in _class_copies
    cdef object __weakref__
    # The C function ``implementation`` calls, for an operator of two
    # operands (NULL for others).
    cdef cassette_binary direct
    # The protocol is ``watching`` and the runtime neither tags nor is
    # nested: operations run by ``Protocol.run_vector``, with ``direct``
    # as the primitive when the implementation is the callee.
    cdef bint watching
    cdef cassette_binary watching_direct

    def __init__(self, Runtime runtime, kind):
        name, arrangement_name, negate = ARRANGED_SITES.get(kind, (kind, None, False))
        arrangement = _ARRANGEMENT_CODES.get(arrangement_name, 0)
        operation = OPERATIONS[name]
        self.name = name
        self.runtime = runtime
        self.callee = operation.callee
        self.implementation = operation.implementation
        self.arrangement = arrangement
        self.negate = negate
        self.generation = -1
        self.is_getitem = kind == "getitem"
        self.is_setitem = kind == "setitem"
        self.handler_cache = ()
        self.direct = _direct_binary(self.implementation)

    cdef bint refresh(self):
        """Bring the plan up to date; True when no handler applies."""
        if self.generation != _generation:
            plan = dispatch.plan(type(self.runtime.ctx), self.callee)
            # Under tagging even an unhooked operation runs the protocol:
            # its fallback propagates metadata.
            self.protocol = (None if plan is EMPTY and not self.runtime._tagging
                             else _compiled(plan))
            execute = plan.execute
            only_execute = (plan.prehook is None and plan.posthook is None
                            and plan.fallback is None)
            self.unhooked_tagging = (
                only_execute and self.runtime._tagging and self.runtime.parent is None
                and (execute is None
                     or (execute.unconditional is None and execute.by_types is not None))
                and not _propagator_of(self.callee)[1])
            self.execute_by_types = None if execute is None else execute.by_types
            self.execute_only = (execute.unconditional
                                 if only_execute and execute is not None else None)
            self.execute_selected = (only_execute and execute is not None
                                     and execute.unconditional is None
                                     and execute.by_types is not None)
            self.handler_cache = ()
            self.watching = (self.protocol is not None and self.protocol.watching
                             and self.runtime.parent is None and not self.runtime._tagging)
            self.watching_direct = (self.direct if self.implementation is self.callee
                                    else NULL)
            self.generation = _generation
        return self.protocol is None

    cdef PyObject *_handler_for(self, object ta, object tb, object tc, long mask) except? NULL:
        """The ``execute`` handler chosen for operands of types ``ta, tb[,
        tc]`` (``tc`` None for two operands; each as ``_selection_type``
        gives it) of which those in ``mask`` are tagged with the context's
        tag, None for none, as the selector's cache by types has it (see
        ``_select``); NULL while the selector has not been asked
        (borrowed).  Answers are kept in ``handler_cache`` (compared by
        identity, without building a key) for the site's last sixteen
        combinations (a site sees plain and tagged operands in each
        order)."""
        cdef object mask_ = _MASKS[mask]
        cdef PyObject *found = cassette_cached_handler(self.handler_cache, ta, tb, tc, mask_)
        if found is not NULL:
            return found
        found = PyDict_GetItemWithError(
            self.execute_by_types, _by_types_key((ta, tb) if tc is None else (ta, tb, tc), mask))
        if found is not NULL:
            self.handler_cache = _remembered(self.handler_cache, ta, tb, tc, mask_,
                                             <object>found)
            if not self.copies_classes and (_heap_class(ta) or _heap_class(tb)
                                            or _heap_class(tc)):
                self.copies_classes = True
                _note_class_copy(self)
        return found

    cdef inline bint unhooked(self, object ta, object tb, object tc, long mask):
        """Under tagging: whether the protocol would come down to the
        fallback's propagation for operands of types ``ta, tb[, tc]``
        (``mask``: as for ``_handler_for``) — no hook, no handler for them,
        known once the selector has been asked — so that an operation
        without metadata runs directly and a list element is read or
        written here (as ``_call_tagged`` would)."""
        cdef PyObject *found
        if not (self.unhooked_tagging and self.generation == _generation):
            return False
        if self.execute_by_types is None:
            return True
        found = self._handler_for(ta, tb, tc, mask)
        return found is not NULL and <object>found is None

    cdef inline bint _unhooked_store(self, object value):
        """``unhooked`` for storing ``value`` into a list at an int."""
        cdef long owned = _owned(self.runtime._tag, value)
        return self.unhooked(list, int, _selection_type(value, owned), owned << 2)

    cdef inline object _execute(self, object handler, object a, object b):
        """The protocol of ``callee(a, b)`` when ``handler`` is the only one
        that can run: called directly, with the protocol's tail
        (``overdub_instead``) when it declines."""
        cdef Protocol protocol
        out = self.runtime.invoke(handler, self.runtime.ctx, self.callee, a, b, 4, (), None)
        if out is _OverdubInstead:
            protocol = self.protocol        # (owned: see _watched)
            out = protocol.overdub_instead(self.runtime, self.callee, None,
                                           self.callee, (a, b), None, self.name)
        return (not out) if self.negate else out

    cdef inline bint _plain_operands(self, object a, object b):
        """Whether ``a`` and ``b`` (None: absent) carry no metadata: neither
        is tagged nor has a record in the bindings cache."""
        if _is_tagged(a) or (b is not None and _is_tagged(b)):
            return False
        cdef Runtime runtime = self.runtime
        return not runtime._entries or (
            (cassette_recordless(a) or runtime._record_of(a) is None)
            and (b is None or cassette_recordless(b) or runtime._record_of(b) is None))

    cdef object _operate(self, tuple args):
        cdef object out
        cdef Protocol protocol
        if self.refresh():
            if self.runtime.parent is not None:
                out = self.runtime.parent.call(self.callee, *args)
            else:
                out = cassette_primitive_call_tuple(self.implementation, args, None)
        else:
            protocol = self.protocol        # (owned: see _watched)
            out = protocol.run(self.runtime, self.callee, None,
                               self.callee, args, None, self.name)
        if self.negate:
            return not out
        return out

    cdef inline bint runs_directly(self, object a):
        """Whether the operation on the lone operand ``a`` is its plain
        implementation (the plan being up to date)."""
        return ((self.protocol is None and self.runtime.parent is None)
                or (self.execute_by_types is None and self.unhooked(None, None, None, 0)
                    and self._plain_operands(a, None)))

    cdef object _watched(self, PyObject **operands, Py_ssize_t n, cassette_binary direct):
        """The operation on ``operands[:n]`` when the site is ``watching``.
        The protocol is held here while it runs: the operation may reach
        this site again (the same operator in the Python method it calls)
        after a registration changed the plan, and ``refresh`` then
        replaces ``self.protocol``, which would free the one running."""
        cdef Protocol protocol = self.protocol
        out = protocol.run_vector(self.runtime, self.callee, None, self.callee, direct,
                                  operands, n)
        return (not out) if self.negate else out

    cdef object _call1(self, a):
        cdef PyObject *operand
        if self.generation == _generation:
            if self.runs_directly(a):
                return self.implementation(a)
            if self.watching:
                operand = <PyObject *>a
                return self._watched(&operand, 1, NULL)
        return self._operate((a,))

    cdef inline object _implement2(self, a, b):
        """``implementation(a, b)``."""
        if self.direct is not NULL:
            return self.direct(a, b)
        return self.implementation(a, b)

    cdef object _call2(self, a, b):
        cdef PyObject *operands[2]
        cdef PyObject *handler
        cdef Py_ssize_t i
        cdef long mask, owned_a, owned_b
        if self.arrangement == 1:
            a, b = b, a
        if self.generation == _generation:
            if self.protocol is None and self.runtime.parent is None:
                out = self._implement2(a, b)
                return (not out) if self.negate else out
            if self.watching:
                operands[0] = <PyObject *>a
                operands[1] = <PyObject *>b
                return self._watched(operands, 2, self.watching_direct)
            if self.execute_only is not None:
                return self._execute(self.execute_only, a, b)
            if self.execute_by_types is not None:
                if _is_tagged(a) or _is_tagged(b):
                    tag = self.runtime._tag
                    owned_a = _owned(tag, a)
                    owned_b = _owned(tag, b)
                    mask = owned_a | (owned_b << 1)
                    handler = self._handler_for(_selection_type(a, owned_a),
                                                _selection_type(b, owned_b), None, mask)
                else:
                    handler = self._handler_for(type(a), type(b), None, 0)
                if handler is NULL:           # the selector decides (and caches)
                    return self._operate((a, b))
                if <object>handler is not None:
                    if self.execute_selected:
                        return self._execute(<object>handler, a, b)
                    return self._operate((a, b))
            if self.unhooked_tagging:
                if self.is_getitem and type(a) is list and type(b) is int:
                    out = _list_read(self.runtime, a, b)
                    if out is _UNRECORDED:
                        i = _element_index(<list>a, b)
                        if i >= 0:
                            return (<list>a)[i]
                        return self.implementation(a, b)     # its IndexError
                    if out is not _UNDECIDED:
                        return out
                elif self._plain_operands(a, b):
                    out = self._implement2(a, b)
                    return (not out) if self.negate else out
        return self._operate((a, b))

    cdef object _call3(self, a, b, c):
        cdef PyObject *operands[3]
        cdef Py_ssize_t i
        if self.arrangement == 2:
            # a store: (value, container, key) on the stack
            if (self.is_setitem and type(b) is list and type(c) is int
                    and cassette_builtin_instance(_innermost(a))
                    and self._unhooked_store(a)):
                out = _list_write(self.runtime, b, c, a)
                if out is _UNRECORDED:
                    if self._plain_operands(a, None):
                        i = _element_index(<list>b, c)
                        if i >= 0:
                            (<list>b)[i] = a
                        else:
                            self.implementation(b, c, a)     # its IndexError
                        return None
                elif out is not _UNDECIDED:
                    return out
            if self.generation == _generation and self.watching:
                operands[0] = <PyObject *>b
                operands[1] = <PyObject *>c
                operands[2] = <PyObject *>a
                return self._watched(operands, 3, NULL)
            args = (b, c, a)
        elif self.arrangement == 3:
            args = (a, slice(b, c))
        else:
            if self.generation == _generation and self.watching:
                operands[0] = <PyObject *>a
                operands[1] = <PyObject *>b
                operands[2] = <PyObject *>c
                return self._watched(operands, 3, NULL)
            args = (a, b, c)
        return self._operate(args)

    cdef object _call4(self, a, b, c, d):
        # setslice: (value, obj, start, stop)
        return self._operate((b, slice(c, d), a))


cdef cassette_binary _direct_binary(object implementation):
    """The C function ``implementation`` comes down to when it is one of the
    operator module's functions of two operands, else NULL."""
    name = getattr(implementation, "__name__", None)
    if type(name) is not str or getattr(operator, name, None) is not implementation:
        return NULL
    return cassette_binary_named(name.encode())


cdef object _operation_entry(object site, PyObject **args, Py_ssize_t nargs):
    """What the slot of an operation site runs (see ``cassette_slot_new``)."""
    cdef OperationSite operation = <OperationSite>site
    if nargs == 2:
        return operation._call2(<object>args[0], <object>args[1])
    if nargs == 1:
        return operation._call1(<object>args[0])
    if nargs == 3:
        return operation._call3(<object>args[0], <object>args[1], <object>args[2])
    if nargs == 4:
        return operation._call4(<object>args[0], <object>args[1], <object>args[2],
                                <object>args[3])
    raise TypeError(f"the slot of {operation.name!r} takes 1 to 4 operands, got {nargs}")


cdef object _propagation_entry(object site, PyObject **args, Py_ssize_t nargs):
    """What the slot of a propagation site runs."""
    cdef PropagationSite propagation = <PropagationSite>site
    if nargs == 1:
        return propagation._call1(<object>args[0])
    if nargs == 2:
        return propagation._call2(<object>args[0], <object>args[1])
    if nargs == 3:
        return propagation._call3(<object>args[0], <object>args[1], <object>args[2])
    raise TypeError(f"the slot of {propagation.name!r} takes 1 to 3 operands, got {nargs}")
