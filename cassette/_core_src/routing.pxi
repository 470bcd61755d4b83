# Routing, the Python side: the redirect a routed call takes, and the
# functions cassette.routing calls.
#
# Part of cassette/_core.pyx (included there; see its map).

# -- routing (see the comment on cassette_trampoline) -----------------------

# Interned, as the names of functions a ``def`` makes are: compared by identity.
cdef object _GET_NAME = sys.intern("__get__")


cdef object _redirect(object runtime, object func, PyObject **args, size_t nargsf,
                      PyObject *kwnames):
    """A routed function called by the interpreter on behalf of rewritten
    code: an operation of that code's runtime."""
    target = (<Runtime>runtime)._resolve(func)
    if target is func:
        return cassette_plain_call(func, args, nargsf, kwnames)
    result = PyObject_Vectorcall(target, args, nargsf, kwnames)
    if (<PyFunctionObject *>func).func_name == <PyObject *>_GET_NAME:
        # What a descriptor gives the interpreter it may call next (a
        # special method's descriptor returning a closure).
        cassette_route_one(<PyObject *>result)
    elif type(result) is FunctionType:
        # What C code gets from a Python function it called, it may call
        # next (3.11's re._subx returns the function the matcher calls for
        # each match).
        cassette_route_one(<PyObject *>result)
    return result



cdef tuple _ACTING_CODES = callables.acting_for_program_codes()


# -- pinned attribute loads (Layer.attribute_load_pin; 3.14+) ----------------
#
# Each code object bound from a template pins its loads of names some
# property with a routed getter has; the loads of other names are watched
# (weakly), to be pinned when a property takes their name.

cdef set _PROPERTY_NAMES = routing.PROPERTY_NAMES
# (weak reference to a bound code object, its Template.attribute_loads)
cdef list _watched = []
cdef Py_ssize_t _watched_limit = 1024
cdef set _watched_names = set()


cdef _watch_attribute_loads(code, tuple loads):
    global _watched, _watched_limit
    cdef bint watch = False
    for unit, name in loads:
        if name in _PROPERTY_NAMES:
            cassette_pin_attribute_load(code, unit)
        else:
            watch = True
            _watched_names.add(name)
    if watch:
        if len(_watched) >= _watched_limit:
            _watched = [entry for entry in _watched
                        if cassette_weakref_target((<tuple>entry)[0]) != <PyObject *>None]
            _watched_limit = max(1024, 2 * len(_watched))
        _watched.append((PyWeakref_NewRef(code, None), loads))


def _pin_loads_of(name):
    """Pin every watched load of ``name`` (routing.on_property_name)."""
    cdef PyObject *code
    if name not in _watched_names:
        return
    for ref, loads in _watched:
        code = cassette_weakref_target(ref)
        if code == NULL:
            PyErr_Clear()
        elif code != <PyObject *>None:
            for unit, loaded in loads:
                if loaded == name:
                    cassette_pin_attribute_load(<object>code, unit)


cdef _install_attribute_load_pin():
    pin = LAYER.attribute_load_pin
    if pin is None:
        return
    load_attr, load_attr_property, opcodes, never = pin
    for opcode in opcodes:
        cassette_allow_pinning(opcode)
    cassette_install_attribute_load_pin(load_attr, load_attr_property, never)
    routing.on_property_name(_pin_loads_of)




cdef extern from "_core_src/routing.h":
    void cassette_install_global_routing(object route_global)


cassette_install_global_routing(routing.route_global)


def route(function, protocol=False):
    """Route ``function`` (a Python function): from now on, when the
    interpreter calls it on behalf of overdubbed code, it runs overdubbed.
    ``protocol``: the interpreter may call it through a protocol (a special
    method, a property accessor), which must then not be inlined.  True if
    routing changed by this call."""
    return cassette_route_function(function, 1 if protocol else 0) == 1


def is_routed(function):
    """True when ``function`` is routed."""
    return cassette_is_routed(function)


def handler_being_called():
    """The handler a runtime is calling on this thread, or None."""
    return cassette_handler_being_called()


def is_barrier(frame):
    """True when ``frame`` is calling a handler that has no frame of its own
    yet (or never will: one written in C): what the interpreter starts from
    ``frame`` meanwhile — the handler's ``**kwargs`` hashing a key, say — is
    the handler's, not the program's."""
    return cassette_is_barrier(frame)


def live_referents(obj):
    """What the garbage collector's traversal of ``obj`` visits, less what
    is not alive (see ``callables.live_referents``, which this replaces)."""
    return cassette_live_referents(obj)


callables.live_referents = live_referents


def frame_runtime(frame):
    """The runtime on whose behalf ``frame`` runs, or None: the runtime its
    code was rewritten for, looking past the library's frames that act for
    the program, and None for the frame running a handler."""
    return cassette_frame_runtime(frame)


def type_defines(kind, tuple names):
    """True when the MRO of class ``kind`` defines one of ``names`` (str),
    read as the interpreter reads it (``_PyType_Lookup``: the class cache,
    no code of the program run)."""
    cdef PyTypeObject *tp = <PyTypeObject *>kind
    if not isinstance(kind, type):
        raise TypeError("type_defines() needs a class")
    for name in names:
        if cassette_type_lookup(tp, name) is not NULL:
            return True
    return False


def class_seen(cls):
    """True when this version of ``cls`` was noted by :func:`note_class_seen`."""
    return bool(cassette_class_seen(<PyTypeObject *>cls))


def note_class_seen(cls):
    """Note that the current version of ``cls`` was routed."""
    cassette_class_saw(<PyTypeObject *>cls)


def install_holders(tuple types):
    """Make ``types`` the classes whose instances, handed to a primitive,
    have the Python callables they hold routed (``routing.HOLDERS``)."""
    cassette_install_holders(types)


def watch_module_fetches(bint begin):
    """Begin (``begin`` true) or end the load of a compiled module on
    behalf of overdubbed code: meanwhile, what a module attribute read
    returns is routed (see ``cassette_module_getattro``)."""
    cassette_watch_module_fetches(begin)
