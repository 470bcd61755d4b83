# Tagged values read and made in place, and the tagging API's common case
# (tag, untag, metadata, istagged without a Python frame).
#
# Part of cassette/_core.pyx (included there; see its map).

cdef object _TaggedBase = None
cdef str _TAG_SLOT = TAGGED_TAG_SLOT
cdef str _VALUE_SLOT = TAGGED_VALUE_SLOT
cdef str _DATA_SLOT = TAGGED_DATA_SLOT


# Where a tagged value keeps its value, tag and metadata, and a Tag its
# types: read and written in place (a setattr or getattr looks the slot's
# descriptor up first).  -1 until ``install_tagging_api`` (then the generic
# attribute protocol is used).
cdef Py_ssize_t _OFF_VALUE = -1, _OFF_TAG = -1, _OFF_DATA = -1, _OFF_TAG_TYPES = -1
cdef Py_ssize_t _OFF_CONTEXT_TAG = -1
cdef object _tg_context_tag_slot = None


cdef inline object _slot(object obj, Py_ssize_t offset, str name):
    """Slot ``name`` of ``obj`` (an instance of the class whose slot it is)."""
    cdef PyObject *found
    if offset >= 0:
        found = cassette_slot_get(obj, offset)
        if found is not NULL:
            return <object>found
    return PyObject_GenericGetAttr(obj, name)      # empty: the AttributeError


cdef inline object _value_of(object tagged):
    return _slot(tagged, _OFF_VALUE, _VALUE_SLOT)


cdef inline object _tag_of(object tagged):
    return _slot(tagged, _OFF_TAG, _TAG_SLOT)


cdef inline object _data_of(object tagged):
    return _slot(tagged, _OFF_DATA, _DATA_SLOT)


cdef inline object _innermost(object value):
    """``value`` with every tag, of any context, taken off."""
    while _is_tagged(value):
        value = _value_of(value)
    return value


cdef object _new_tagged(object made, object value, object tag_, object data):
    """A new instance of tagged type ``made``."""
    if _OFF_VALUE >= 0:
        if cassette_tagged_adopted(<PyTypeObject *>made):
            return cassette_tagged_new(<PyTypeObject *>made, value, tag_, data)
        return cassette_slots_new(made, _OFF_VALUE, value, _OFF_TAG, tag_, _OFF_DATA, data)
    tagged = object.__new__(made)
    PyObject_GenericSetAttr(tagged, _VALUE_SLOT, value)
    PyObject_GenericSetAttr(tagged, _TAG_SLOT, tag_)
    PyObject_GenericSetAttr(tagged, _DATA_SLOT, data)
    return tagged


# The metaclass of tagged types (``type(cassette.Tagged)``), NULL until the
# tagging layer is loaded.  Only tagged values have a class of that
# metaclass (``Tagged`` and ``Tagged[T]`` have no instances), so one pointer
# comparison tells a tagged value: cheaper than walking a class's MRO, which
# is what an isinstance test of every plain operand would cost.
cdef PyTypeObject *_tagged_meta = NULL


cdef inline bint _is_tagged(object value) noexcept:
    """Whether ``value`` is tagged by any context."""
    global _TaggedBase, _tagged_meta
    if _tagged_meta is NULL:
        if _TaggedBase is None:
            _TaggedBase = _dispatch_module.TAGGED
            if _TaggedBase is None:
                return False
        _tagged_meta = Py_TYPE(_TaggedBase)
    return Py_TYPE(<object><PyObject *>Py_TYPE(value)) is _tagged_meta


cdef inline object _untag_one(object value, object tag):
    """``value`` without ``tag`` (the tag of the running context)."""
    if _tagged_by(value, tag):
        return _value_of(value)
    return value


cdef bint _holds_tagged(object container):
    """Whether a list, tuple, set or dict just built holds a tagged value."""
    cdef object kind = type(container)
    if kind is list or kind is tuple or kind is set:
        for element in container:
            if _is_tagged(element):
                return True
    elif kind is dict:
        for key, value in (<dict>container).items():
            if _is_tagged(key) or _is_tagged(value):
                return True
    return False


# -- the tagging API's common case --------------------------------------------
#
# ``cassette.tagging`` defines the API; when the core is in use it installs
# these versions of its four most called functions, which decide the common
# case (a context with tagging, a value tagged by no other context, metadata
# already of the allowed type) without a Python frame, and hand every other
# case — errors included — to the Python definitions.

cdef object _tg_slow_tag = None     # the Python definitions (the slow paths)
cdef object _tg_slow_untag = None
cdef object _tg_slow_istagged = None
cdef object _tg_slow_metadata = None
cdef object _tg_context = None      # cassette.Context
cdef object _tg_tag_type = None     # cassette.tagging.Tag
cdef dict _tg_allowed = None        # (context class, primal type) -> allowed type
cdef object _tg_no_data = None      # NoMetaData


def install_tagging_api(python_api, context, tag_type, tagged_base, allowed, no_data):
    """Called once by ``cassette.tagging``: the Python definitions of ``tag``,
    ``untag``, ``istagged`` and ``metadata``, and what the fast paths read."""
    global _tg_slow_tag, _tg_slow_untag, _tg_slow_istagged, _tg_slow_metadata
    global _tg_context, _tg_tag_type, _tg_allowed, _tg_no_data
    _tg_slow_tag, _tg_slow_untag, _tg_slow_istagged, _tg_slow_metadata = python_api
    _tg_context, _tg_tag_type = context, tag_type
    _tg_allowed, _tg_no_data = allowed, no_data
    global _OFF_VALUE, _OFF_TAG, _OFF_DATA, _OFF_TAG_TYPES
    offsets = [cassette_slot_offset(vars(tagged_base)[name])
               for name in (_VALUE_SLOT, _TAG_SLOT, _DATA_SLOT)]
    offsets.append(cassette_slot_offset(vars(tag_type)["_types"]))
    if all(offset >= 0 for offset in offsets):
        _OFF_VALUE, _OFF_TAG, _OFF_DATA, _OFF_TAG_TYPES = offsets
        cassette_tagged_learn(<PyTypeObject *>tagged_base, _OFF_VALUE, _OFF_TAG, _OFF_DATA)
    global _TaggedBase, _tagged_meta, _tg_context_tag_slot, _OFF_CONTEXT_TAG
    _TaggedBase = tagged_base
    _tagged_meta = Py_TYPE(tagged_base)
    _tg_context_tag_slot = vars(context)["tag"]
    _OFF_CONTEXT_TAG = cassette_slot_offset(_tg_context_tag_slot)
    if _OFF_VALUE >= 0:
        cassette_api_learn(<PyTypeObject *>tag_type, _tagged_meta, _OFF_CONTEXT_TAG, no_data)
    lifetimes.watch_collections()       # (for _forget_tagging_seen_last)


cdef inline bint _tag_in_slot(object ctx):
    """Whether ``ctx``'s class keeps ``Context.tag`` (a slot) unchanged."""
    cdef PyTypeObject *tp = Py_TYPE(ctx)
    if cassette_tag_slot_known(tp):
        return True
    if cassette_type_lookup(tp, "tag") is <PyObject *>_tg_context_tag_slot:
        cassette_tag_slot_found(tp)      # the lookup gave it a version tag
        return True
    return False


cdef inline object _api_tag(object ctx):
    """The tag of a context with tagging, or None (the slow path decides)."""
    cdef PyObject *found
    # The class seen last (a Context subclass) needs no subclass test.  Not
    # isinstance: ContextMeta would make it look up __instancecheck__.
    if (cassette_tag_slot_known(Py_TYPE(ctx))
            or PyObject_TypeCheck(ctx, <PyTypeObject*>_tg_context)):
        # Context.tag is a slot: read in place unless a subclass redefines it.
        if _OFF_CONTEXT_TAG >= 0 and _tag_in_slot(ctx):
            found = cassette_slot_get(ctx, _OFF_CONTEXT_TAG)
            if found is NULL:
                return None
            tag_ = <object>found
        else:
            tag_ = ctx.tag
        if type(tag_) is _tg_tag_type:
            return tag_
    return None


cdef inline object _types_of(object tag_):
    """The dict of tagged types of a ``Tag`` (exactly a Tag)."""
    return _slot(tag_, _OFF_TAG_TYPES, "_types")


cdef inline bint _tagged_by(object x, object tag_):
    return _is_tagged(x) and _tag_of(x) is tag_


# The four functions are builtins made from the entries below (see
# ``cassette_tagging_api``): called with their operands in place.

cdef object _slow_api(object slow, PyObject **args, Py_ssize_t nargs, PyObject *kwnames):
    """The Python definition ``slow`` called as the builtin was."""
    return PyObject_Vectorcall(slow, args, <size_t>nargs, kwnames)


cdef object _untag_entry(object module, PyObject **args, Py_ssize_t nargs, PyObject *kwnames):
    """``untag(x, ctx)``: the value ``x`` wraps if it is tagged w.r.t.
    ``ctx``, else ``x``."""
    if nargs == 2 and kwnames is NULL:
        tag_ = _api_tag(<object>args[1])
        if tag_ is not None:
            if _tagged_by(<object>args[0], tag_):
                return _value_of(<object>args[0])
            return <object>args[0]
    return _slow_api(_tg_slow_untag, args, nargs, kwnames)


cdef object _metadata_entry(object module, PyObject **args, Py_ssize_t nargs,
                            PyObject *kwnames):
    """``metadata(x, ctx)``: the metadata ``x`` carries w.r.t. ``ctx``
    (``NoMetaData`` if none)."""
    if nargs == 2 and kwnames is NULL:
        tag_ = _api_tag(<object>args[1])
        if tag_ is not None:
            if _tagged_by(<object>args[0], tag_):
                return _data_of(<object>args[0])
            return _tg_no_data
    return _slow_api(_tg_slow_metadata, args, nargs, kwnames)


cdef object _istagged_entry(object module, PyObject **args, Py_ssize_t nargs,
                            PyObject *kwnames):
    """``istagged(x, ctx)``: whether ``x`` is tagged w.r.t. ``ctx``."""
    if nargs == 2 and kwnames is NULL:
        tag_ = _api_tag(<object>args[1])
        if tag_ is not None:
            return _tagged_by(<object>args[0], tag_)
    return _slow_api(_tg_slow_istagged, args, nargs, kwnames)


# The last answer found in the allowed-metadata cache: a tool tags values of
# one primal type for one context class, again and again.
cdef object _last_context_type = None, _last_primal_type = None, _last_allowed = None
cdef Py_ssize_t _last_allowed_generation = -2


cdef inline object _cached_allowed_metadata(object context_type, object primal_type):
    """The cached ``metadatatype`` answer for these types, or None."""
    global _last_context_type, _last_primal_type, _last_allowed, _last_allowed_generation
    if (context_type is _last_context_type and primal_type is _last_primal_type
            and _last_allowed_generation == _generation):
        return _last_allowed
    allowed = _tg_allowed.get((context_type, primal_type))
    if allowed is not None:
        _last_context_type, _last_primal_type, _last_allowed = context_type, primal_type, allowed
        _last_allowed_generation = _generation
    return allowed


cdef object _tag_entry(object module, PyObject **args, Py_ssize_t nargs, PyObject *kwnames):
    """``tag(value, ctx, metadata=NoMetaData)``: ``value`` tagged w.r.t.
    ``ctx``, carrying ``metadata``."""
    if (nargs == 3 or nargs == 2) and kwnames is NULL:
        value = <object>args[0]
        tag_ = _api_tag(<object>args[1])
        if tag_ is not None and not _is_tagged(value):   # the slow path tags tagged values
            primal_type = type(value)
            data = <object>args[2] if nargs == 3 else _tg_no_data
            if data is not _tg_no_data:
                allowed = _cached_allowed_metadata(type(<object>args[1]), primal_type)
                if allowed is None or type(data) is not allowed:
                    return _slow_api(_tg_slow_tag, args, nargs, kwnames)
            made = _made_tagged_type(tag_, primal_type)
            if made is None:            # the tag's first value of this type
                made = tag_.tagged_type(primal_type)
            if cassette_tagged_adopted(<PyTypeObject *>made):
                data_type = type(data)
                cassette_api_note_tagged(type(<object>args[1]), tag_, primal_type,
                                         NULL if data is _tg_no_data
                                         else <PyObject *>data_type, made)
            return _new_tagged(made, value, tag_, data)
    return _slow_api(_tg_slow_tag, args, nargs, kwnames)


cassette_api_set_general(<void *>_untag_entry, <void *>_metadata_entry, <void *>_istagged_entry,
                         <void *>_tag_entry)
tag = cassette_tagging_api(CASSETTE_API_TAG, cassette_api_tag, __name__)
# (Their C functions decide the commonest case with borrowed references
# only, and call the entries above for the rest: see tagging.h.)
untag = cassette_tagging_api(CASSETTE_API_UNTAG, cassette_api_untag, __name__)
istagged = cassette_tagging_api(CASSETTE_API_ISTAGGED, cassette_api_istagged, __name__)
metadata = cassette_tagging_api(CASSETTE_API_METADATA, cassette_api_metadata, __name__)
