# Fast paths of metadata propagation: records of containers, tagged
# primitives (TaggedPrimitive) and propagation slots (PropagationSite).
#
# Part of cassette/_core.pyx (included there; see its map).

cdef dict _propagators = {}     # callee -> (propagate or None, always)
# The same for the classes and functions of the program (which it can drop,
# from their module too), by address: (weak reference to the callee,
# answer).  Weak, so that nothing here keeps a callee alive and nothing
# needs freeing when a collection starts (on 3.11 a class freed there, at
# whatever allocation started the collection, corrupted the interpreter).
# Other callees the program can drop are not kept: they may die without a
# collection.
cdef dict _weak_propagators = {}


cdef inline bint _kept_weakly(callee) noexcept:
    """Whether ``_propagator_of`` keeps ``callee``'s answer weakly: a class
    or function of the program."""
    return (type(callee) is FunctionType
            or (PyType_Check(callee)
                and PyType_HasFeature(<PyTypeObject *>callee, Py_TPFLAGS_HEAPTYPE)))


cdef tuple _propagator_of(object callee):
    cdef PyObject *known
    try:
        found = _propagators.get(callee)
    except TypeError:           # an unhashable callee
        return (None, False)
    if found is None and _kept_weakly(callee):
        known = PyDict_GetItemWithError(_weak_propagators, _address(callee))
        if known is not NULL and cassette_weakref_target(
                (<tuple>known)[0]) == <PyObject *>callee:
            return <tuple>(<tuple>known)[1]
    if found is None:
        propagate = _dispatch_module.tagging_propagator(callee)
        found = (propagate, bool(getattr(propagate, "always", False)))
        if _kept_weakly(callee):
            if len(_weak_propagators) >= 4096:
                _weak_propagators.clear()
            _weak_propagators[_address(callee)] = (PyWeakref_NewRef(callee, None), found)
        elif _lives_with_its_module(callee):
            if len(_propagators) < 4096:
                _propagators[callee] = found
    return <tuple>found


cdef object _UNDECIDED = object()
cdef object _UNRECORDED = object()
cdef object _getitem_propagator = None
cdef object _operator_getitem = operator.getitem
cdef object _operator_setitem = operator.setitem
cdef object _setitem_propagator = None

# The class of the bindings cache's records (``propagation._Record``) and
# where its slots are: learnt from the first record met.
cdef object _record_type = None
cdef Py_ssize_t _OFF_RECORD_TARGET = -1, _OFF_RECORD_WEAK = -1, _OFF_RECORD_ITEMS = -1
cdef Py_ssize_t _OFF_RECORD_ATTRS = -1
# Whether a record can be made in place: the record type has those four
# slots and nothing else to initialise (no __dict__, no __weakref__).
cdef bint _records_made_here = False


cdef void _learn_record_type(object record_type) except *:
    """Where the slots the core reads are; a record type without them is
    a change of ``propagation`` the core must follow, said loudly."""
    global _record_type, _OFF_RECORD_TARGET, _OFF_RECORD_WEAK, _OFF_RECORD_ITEMS
    global _OFF_RECORD_ATTRS, _records_made_here
    namespace = vars(record_type)
    offsets = [cassette_slot_offset(namespace[name]) if name in namespace else -1
               for name in _RECORD_SLOTS]
    if -1 in offsets:
        raise TypeError(f"cassette's core reads the slots {_RECORD_SLOTS} of the bindings "
                        f"cache's records, and {record_type.__qualname__} does not have them")
    _OFF_RECORD_TARGET, _OFF_RECORD_WEAK, _OFF_RECORD_ITEMS, _OFF_RECORD_ATTRS = offsets
    _records_made_here = cassette_plain_slotted(<PyTypeObject *>record_type, 4)
    _record_type = record_type


cdef tuple _RECORD_SLOTS = ("target", "weak", "items", "attrs")

# Where a bindings cache keeps its count of additions and its sweep
# threshold: learnt from the first cache met (-2: not yet; -1: not slots,
# the count read by name and no record made here).
cdef Py_ssize_t _OFF_ADDITIONS = -2, _OFF_SWEEP_AT = -1


cdef inline object _additions_of(object bindings):
    """``bindings.additions``: an int object, a new one after each record
    the cache adds (compared by identity)."""
    global _OFF_ADDITIONS, _OFF_SWEEP_AT
    if _OFF_ADDITIONS == -2:
        namespace = vars(type(bindings))
        offsets = [cassette_slot_offset(namespace[name]) if name in namespace else -1
                   for name in ("additions", "sweep_at")]
        _OFF_ADDITIONS, _OFF_SWEEP_AT = offsets if -1 not in offsets else (-1, -1)
    return _slot(bindings, _OFF_ADDITIONS, "additions")


cdef object _record_parts(Runtime runtime, object sequence, list parts):
    """Record ``parts`` for list or tuple ``sequence`` in ``runtime``'s
    bindings cache, as ``propagation.record_parts`` does: a list or tuple
    takes no weak reference, so its record holds it strongly (until the
    cache's sweep finds nobody else does).  Made here when nothing else is
    to be done; the propagation layer decides otherwise (a stale record at
    the address, a sweep due, a record type not yet met)."""
    cdef PyObject *found
    bindings = runtime._bindings
    entries = runtime._entries
    if (_records_made_here and _OFF_ADDITIONS >= 0 and entries is not None
            and len(entries) < <object>cassette_slot_get(bindings, _OFF_SWEEP_AT)):
        key = _address(sequence)
        found = PyDict_GetItemWithError(entries, key)
        if found is NULL:
            record = cassette_slots_new4(_record_type, _OFF_RECORD_TARGET, sequence,
                                         _OFF_RECORD_WEAK, False, _OFF_RECORD_ITEMS, parts,
                                         _OFF_RECORD_ATTRS, None)
            entries[key] = record
            cassette_slot_set(bindings, _OFF_ADDITIONS, _additions_of(bindings) + 1)
            return None
    _dispatch_module.record_parts(runtime.ctx, sequence, parts)


cdef object _parts_in_step(Runtime runtime, object sequence):
    """The per-element parts ``runtime``'s bindings cache records for
    ``sequence`` (a list or tuple, exactly) when the record is its own and
    has one part per element (what a read may trust after comparing its
    element), a list; ``_UNRECORDED`` when the cache has no record of it;
    else ``_UNDECIDED``."""
    record = runtime._record_of(sequence)
    if record is None:
        return _UNRECORDED
    if (_slot(record, _OFF_RECORD_WEAK, "weak") is not False
            or _slot(record, _OFF_RECORD_TARGET, "target") is not sequence):
        return _UNDECIDED
    parts = _slot(record, _OFF_RECORD_ITEMS, "items")
    if type(parts) is not list or len(<list>parts) != len(sequence):
        return _UNDECIDED
    return parts


cdef object _unpacked_in_step(Runtime runtime, object sequence):
    """The elements of ``sequence`` (a list or tuple, exactly) as a tuple,
    each tagged with the metadata recorded for it while it still holds the
    value recorded; None when the record is not in step (the propagation
    layer decides)."""
    cdef Py_ssize_t i, n
    if type(sequence) is not list and type(sequence) is not tuple:
        return None
    parts = _parts_in_step(runtime, sequence)
    if type(parts) is not list:
        return None
    n = len(<list>parts)
    out = PyTuple_New(n)
    for i in range(n):
        value = sequence[i]
        part = parts[i]
        if part is not None and (<tuple>part)[0] is _innermost(value):
            value = _make_tagged(runtime._tag, value, (<tuple>part)[1])
        Py_INCREF(value)
        PyTuple_SET_ITEM(out, i, value)
    return out


cdef object _built_list(Runtime runtime, list container):
    """``container``, a list just built, with the values tagged by
    ``runtime``'s context replaced by their primal values and their
    metadata recorded (as ``propagation.record_built`` does)."""
    cdef Py_ssize_t i, n = len(container)
    cdef object parts = None
    tag_ = runtime._tag
    for i in range(n):
        value = container[i]
        if _tagged_by(value, tag_):
            if parts is None:
                parts = [None] * n
            primal = _value_of(value)
            container[i] = primal
            (<list>parts)[i] = (_innermost(primal), _data_of(value))
    if parts is not None:
        _record_parts(runtime, container, parts)
    return container


cdef inline Py_ssize_t _element_index(list container, object index):
    """``index`` (an int) as an index of ``container``, or -1 when out of
    range (the primitive raises its own error)."""
    cdef Py_ssize_t n = len(container)
    cdef Py_ssize_t i = PyLong_AsSsize_t(index)
    if i == -1 and PyErr_Occurred() is not NULL:
        PyErr_Clear()               # beyond any index: the primitive's IndexError
        return -1
    if i < 0:
        i += n
    return i if 0 <= i < n else -1


cdef object _list_read(Runtime runtime, list container, object index):
    """``container[index]`` (an int index) when ``runtime``'s bindings cache
    records the list's elements in step with it — the common case of a list
    built in the run — tagged with the element's metadata; ``_UNRECORDED``
    when the cache has no record of the list (a plain read);
    ``_UNDECIDED`` for everything else (the propagation layer decides)."""
    cdef Py_ssize_t i
    parts = _parts_in_step(runtime, container)
    if type(parts) is not list:
        return parts
    i = _element_index(container, index)
    if i < 0:
        return _UNDECIDED
    value = container[i]
    part = (<list>parts)[i]
    if part is None:
        return value
    if (<tuple>part)[0] is not _innermost(value):
        return _UNDECIDED           # moved behind cassette's back: rematch
    return _make_tagged(runtime._tag, value, (<tuple>part)[1])


cdef object _list_write(Runtime runtime, list container, object index, object value):
    """``container[index] = value`` with the element's metadata
    recorded, as :func:`_list_read` reads it (a list without a record gets
    one when ``value`` carries metadata); ``_UNRECORDED`` (not done) when
    neither the list has a record nor ``value`` is tagged, ``_UNDECIDED``
    when not done for another reason."""
    cdef Py_ssize_t i
    parts = _parts_in_step(runtime, container)
    if parts is _UNDECIDED:
        return parts
    tagged = _is_tagged(value)
    if parts is _UNRECORDED and not tagged:
        return parts
    i = _element_index(container, index)
    if i < 0:
        return _UNDECIDED
    if tagged:
        if _tag_of(value) is not runtime._tag:
            return _UNDECIDED
        stored = _value_of(value)
        container[i] = stored
        part = (_innermost(stored), _data_of(value))
        if parts is _UNRECORDED:
            parts = [None] * len(container)
            (<list>parts)[i] = part
            _record_parts(runtime, container, parts)
        else:
            (<list>parts)[i] = part
        return None
    container[i] = value
    (<list>parts)[i] = None
    return None


cdef object _list_element(Runtime runtime, object propagate, tuple args):
    """``lst[i]`` and ``lst[i] = v`` (``args``, the list first) when the
    propagators of ``getitem`` and ``setitem`` would run: see
    :func:`_list_read` and :func:`_list_write`."""
    global _getitem_propagator, _setitem_propagator
    if _getitem_propagator is None:
        _getitem_propagator = _dispatch_module.tagging_propagator(_operator_getitem)
        _setitem_propagator = _dispatch_module.tagging_propagator(_operator_setitem)
    if type(args[1]) is not int:
        return _UNDECIDED
    if propagate is _getitem_propagator and len(args) == 2:
        out = _list_read(runtime, <list>args[0], args[1])
    elif propagate is _setitem_propagator and len(args) == 3:
        out = _list_write(runtime, <list>args[0], args[1], args[2])
    else:
        return _UNDECIDED
    return _UNDECIDED if out is _UNRECORDED else out


# The tagged type found last, for a tag and a primal type.  The tag is
# borrowed, so that the last tag used can die: its death forgets it
# (``forget_tag``); the types, which may be classes of the program, are
# forgotten when a collection starts (``_forget_tagging_seen_last``).
cdef PyObject *_last_tag = NULL
cdef object _last_tagged_primal = None, _last_tagged_type = None


cdef void _forget_tagging_seen_last():
    """At the start of a collection, every cache of the tagging layer that
    remembers the types seen last lets them go: no cache may keep a class
    the program dropped alive (``cassette.lifetimes``).  Each is a class,
    kept alive by its own ``__mro__`` until the collection: none is freed
    here."""
    global _last_tag, _last_tagged_primal, _last_tagged_type
    global _last_context_type, _last_primal_type, _last_allowed
    _last_tag = NULL
    _last_tagged_primal = _last_tagged_type = None
    _last_context_type = _last_primal_type = _last_allowed = None
    cassette_api_forget_seen_last()


def forget_tag(tag_):
    """Called by a dying ``Tag``: the caches that borrow it let it go."""
    global _last_tag
    if _last_tag is <PyObject *>tag_:
        _last_tag = NULL
    cassette_api_forget_tag(<PyObject *>tag_)


cdef inline object _made_tagged_type(object tag_, object primal_type):
    """The type of ``primal_type`` values tagged with ``tag_`` if the tag
    has made it, else None."""
    global _last_tag, _last_tagged_primal, _last_tagged_type
    cdef PyObject *found
    if <PyObject *>tag_ is _last_tag and primal_type is _last_tagged_primal:
        return _last_tagged_type
    found = PyDict_GetItemWithError(_types_of(tag_), primal_type)
    if found is NULL:
        return None
    _last_tag = <PyObject *>tag_
    _last_tagged_primal, _last_tagged_type = primal_type, <object>found
    return <object>found


cdef object _make_tagged(object tag_, object value, object data):
    """A value tagged with ``tag_`` carrying metadata ``data``."""
    made = _made_tagged_type(tag_, type(value))
    if made is None:
        made = tag_.tagged_type(type(value))
    return _new_tagged(made, value, tag_, data)


cdef object _call_tagged(Runtime runtime, tuple propagation, object callee, object f,
                         tuple args, dict kwargs):
    """The fallback under tagging of primitive ``callee`` (called as ``f``),
    without a Python frame of the library between the program and the
    primitive unless metadata is involved (frame-walking code, tracebacks
    and the recursion limit see none): arguments untagged, or the
    propagation layer's ``propagate`` when the primitive has one and some
    argument is tagged or has recorded components (or the propagator must
    always run).  Then, when the context looks for metadata lost, the
    propagation layer's ``checked_loss`` sees the result."""
    out = _fallback_tagged(runtime, propagation, f, args, kwargs)
    if runtime._checks_loss:
        return _checked_loss(runtime.ctx, callee, args, kwargs, out)
    return out


cdef object _checked_loss_function = None     # propagation.checked_loss, once imported


cdef inline bint _all_atoms(tuple values):
    """Whether every one of ``values`` is an untagged number, string or
    None: a value that carries no metadata and holds none."""
    for value in values:
        kind = type(value)
        if not (kind is float or kind is int or kind is str or kind is bool
                or value is None or kind is complex or kind is bytes):
            return False
    return True


cdef object _checked_loss(object ctx, object callee, tuple args, dict kwargs, object out):
    """``propagation.checked_loss`` (imported when first needed: the
    propagation layer imports the tagging layer, which imports this core),
    but for a result that is None or whose type the context lets carry no
    metadata (cached, as ``_may_carry`` reads it): nothing to lose."""
    global _checked_loss_function
    cdef PyObject *allowed
    if out is None:
        return out
    if type(out) is not tuple and type(out) is not list:
        allowed = PyDict_GetItemWithError(_tg_allowed, (type(ctx), type(out)))
        if allowed is not NULL and <object>allowed is None:
            return out
    if _all_atoms(args) and (not kwargs or _all_atoms(tuple(kwargs.values()))):
        return out          # no argument carried metadata, nor holds any
    if _checked_loss_function is None:
        from cassette import propagation
        _checked_loss_function = propagation.checked_loss
    return _checked_loss_function(ctx, callee, args, kwargs or {}, out)


cdef object _fallback_tagged(Runtime runtime, tuple propagation, object f, tuple args,
                             dict kwargs):
    """:func:`_call_tagged` but for ``metadata_loss``."""
    cdef Py_ssize_t i, n
    cdef list untagged
    cdef object propagate = propagation[0]
    cdef object ctx = runtime.ctx, tag = runtime._tag
    cdef dict entries = runtime._entries
    if propagate is not None:
        if propagation[1]:
            return propagate(ctx, f, args, kwargs or {})
        if not kwargs and len(args) >= 2 and type(args[0]) is list and entries:
            out = _list_element(runtime, propagate, args)
            if out is not _UNDECIDED:
                return out
        for arg in args:
            if _is_tagged(arg) or (entries and _address(arg) in entries):
                return propagate(ctx, f, args, kwargs or {})
        if kwargs:
            for arg in kwargs.values():
                if _is_tagged(arg):
                    return propagate(ctx, f, args, kwargs)
        return cassette_primitive_call_tuple(f, args, kwargs)
    n = len(args)
    untagged = None
    for i in range(n):
        value = _untag_one(args[i], tag)
        if value is not args[i]:
            if untagged is None:
                untagged = list(args)
            untagged[i] = value
    if untagged is not None:
        args = tuple(untagged)
    if kwargs:
        kwargs = {k: _untag_one(v, tag) for k, v in kwargs.items()}
    return cassette_primitive_call_tuple(f, args, kwargs)


@cython.final
cdef class TaggedPrimitive:
    """What a primitive is under tagging: the state of the fallback
    (:func:`_call_tagged`) that the Primitive wrapping it runs."""

    cdef Runtime runtime     # its context, tag and entries: read at each call
    cdef object callee, primitive
    cdef tuple propagation

    def __init__(self, Runtime runtime, callee, primitive):
        self.runtime = runtime
        self.callee = callee
        self.primitive = primitive
        self.propagation = _propagator_of(callee)

    def __repr__(self):
        return f"<tagged primitive {self.callee!r}>"


cdef tuple _positional(PyObject **args, Py_ssize_t nargs):
    """The positional arguments of a vectorcall, as a tuple."""
    cdef tuple positional = PyTuple_New(nargs)
    cdef Py_ssize_t i
    for i in range(nargs):
        Py_INCREF(<object>args[i])
        PyTuple_SET_ITEM(positional, i, <object>args[i])
    return positional


cdef dict _keywords(PyObject **args, Py_ssize_t nargs, PyObject *kwnames):
    """The keyword arguments of a vectorcall, as a new dict."""
    cdef dict keywords = {}
    cdef Py_ssize_t i
    if kwnames is not NULL:
        for i in range(len(<tuple>kwnames)):
            keywords[(<tuple>kwnames)[i]] = <object>args[nargs + i]
    return keywords


cdef object _tagged_vectorcall(object state, PyObject **args, size_t nargsf,
                               PyObject *kwnames):
    """A Primitive wrapping a :class:`TaggedPrimitive` called (its arguments
    already routed): the fallback under tagging, with the call's arguments."""
    cdef TaggedPrimitive tagged = <TaggedPrimitive>state
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    keywords = None if kwnames is NULL else _keywords(args, nargs, kwnames)
    cdef Runtime runtime = tagged.runtime
    return _call_tagged(runtime, tagged.propagation, tagged.callee,
                        tagged.primitive, _positional(args, nargs), keywords)




cdef dict _PROPAGATION_KINDS = {
    "built": 1, "list_to_tuple": 2, "unpacked": 3, "keywords": 4, "list_append": 5,
    "set_add": 6, "extended": 7, "is": 8, "is_not": 9, "load_global": 10,
    "store_global": 11, "map_add": 12,
}


@cython.final
cdef class PropagationSite:
    """A propagation slot (see ``cassette.propagation``) of a runtime whose
    context tags and has no tagging context around it: the common case —
    no tagged value, nothing recorded — is decided here, without a Python
    frame; anything else goes to the propagation layer's ``slow`` slot."""

    cdef Runtime runtime
    cdef object slow, name
    cdef int kind
    cdef bint direct
    # The runtime's ``_adoptions`` when ``slow`` was made.
    cdef Py_ssize_t served

    def __init__(self, Runtime runtime, name):
        self.name = name
        self.kind = _PROPAGATION_KINDS[name]
        self.runtime = runtime
        self.slow = None
        self.direct = runtime._tagging and not (
            runtime.parent is not None and engine.chain_has_tagging(runtime.parent))

    cdef object _slow(self):
        """The propagation layer's slot: it closes over the context, so it
        is made when first needed and again after the runtime adopted
        another context (``Runtime.adopt``)."""
        if self.slow is None or self.served != self.runtime._adoptions:
            self.slow = engine.tagging_slot(self.runtime, self.name)
            self.served = self.runtime._adoptions
        return self.slow

    cdef inline bint _recorded(self, object obj):
        cdef dict entries = self.runtime._entries
        return bool(entries) and self.runtime._record_of(obj) is not None

    cdef object _call1(self, a):
        if self.direct:
            if self.kind == 1:
                if not _holds_tagged(a):
                    return a
                if type(a) is list:
                    return _built_list(self.runtime, <list>a)
            elif self.kind == 2:
                if not self._recorded(a) and not _holds_tagged(a):
                    return tuple(a)
            elif not self._recorded(a):         # unpacked, keywords
                return a
            elif self.kind == 3:
                out = _unpacked_in_step(self.runtime, a)
                if out is not None:
                    return out
        return self._slow()(a)

    cdef object _call2(self, a, b):
        cdef object namespace
        if self.direct:
            if self.kind == 5:
                if not _is_tagged(a) and not self._recorded(b):
                    (<list>b).append(a)
                    return None
            elif self.kind == 6:
                if not _is_tagged(a):
                    (<set>b).add(a)
                    return None
            elif self.kind == 7:
                if not self._recorded(a) and not _holds_tagged(b):
                    return None
            elif self.kind == 8 or self.kind == 9:
                if not _is_tagged(a) and not _is_tagged(b):
                    return (a is b) if self.kind == 8 else (a is not b)
            elif self.kind == 10 or self.kind == 11:
                if self.kind == 10 or not _is_tagged(a):
                    namespace = <object>PyEval_GetGlobals()
                    if not self._recorded(namespace):
                        return a
        return self._slow()(a, b)

    cdef object _call3(self, a, b, c):
        if self.direct and not _is_tagged(a) and not _is_tagged(b) and not self._recorded(c):
            c[a] = b
            return None
        return self._slow()(a, b, c)
