# The protocol of one operation: choosing the handler by operand types and
# own masks, and calling it (Protocol).
#
# Part of cassette/_core.pyx (included there; see its map).

cdef inline long _owned(object tag, object value) except -1:
    """1 when ``value`` is tagged with ``tag`` (its outermost tag), else 0."""
    return 1 if tag is not None and _tagged_by(value, tag) else 0


cdef tuple _MASKS = tuple(range(8))     # own masks of up to three operands


cdef inline tuple _remembered(tuple cache, object ta, object tb, object tc, object mask,
                              object handler):
    """``cache`` (read by ``cassette_cached_handler``) with the answer for
    types ``ta, tb, tc`` and own mask ``mask`` first, keeping the sixteen
    most recent."""
    return (ta, tb, tc, mask, handler) + cache[:75]


cdef inline tuple _by_types_key(tuple types, long mask):
    """The key of ``Selector.by_types`` (``dispatch.selection_key``):
    ``types`` — each argument's type, or for one the context tagged the
    type of the value it wraps (``_selection_type``) — then the mask of
    those the context tagged (see ``_owned``) when there are any."""
    return types + (mask,) if mask else types


cdef inline object _selection_type(object value, long owned):
    """The type ``value`` has in a selector's key: that of the value it
    wraps when the context tagged it (``owned``), else its own."""
    return type(_value_of(value)) if owned else type(value)


@cython.final
cdef class Choice:
    """How one hook kind of a :class:`Protocol` chooses its handler: the
    one that always wins (``fixed``), else the selector's answer — read
    from its cache by argument types when it has one (``Selector.by_types``,
    keyed as ``Selector.select`` keys it: the types, then the mask of the
    arguments tagged with the context's tag when there are any), which
    spares calling ``select``.  The answers for up to three arguments are
    also kept here, for the last sixteen combinations of types (compared
    by identity, without building a key), as operation sites keep theirs."""

    cdef object fixed, selector
    cdef dict by_types
    cdef tuple cache
    cdef bint copies_classes     # noted in _class_copies (see sites.pxi)
    cdef object __weakref__

    def __init__(self, selector):
        self.fixed = self.selector = self.by_types = None
        self.cache = ()
        if selector is None:
            return
        if selector.unconditional is not None:
            self.fixed = selector.unconditional
        else:
            self.selector = selector
            self.by_types = selector.by_types

    cdef inline object select(self, object tag, object ctx, tuple args):
        if self.fixed is not None:
            return self.fixed
        if self.selector is None:
            return None
        return self._select(tag, ctx, args)

    cdef object _select(self, object tag, object ctx, tuple args):
        cdef PyObject *hit
        cdef Py_ssize_t n = len(args), i
        cdef long mask = 0, owned
        cdef object ta = None, tb = None, tc = None
        if self.by_types is None:
            return self.selector.select(ctx, args)
        if n <= 3:
            for i in range(n):
                owned = _owned(tag, args[i])
                mask |= owned << i
                kind = _selection_type(args[i], owned)
                if i == 0:
                    ta = kind
                elif i == 1:
                    tb = kind
                else:
                    tc = kind
            hit = cassette_cached_handler(self.cache, ta, tb, tc, _MASKS[mask])
            if hit is not NULL:
                return <object>hit
            types = (ta,) if n == 1 else (ta, tb) if n == 2 else (ta, tb, tc) if n == 3 else ()
        else:
            parts = []
            for i in range(n):
                owned = _owned(tag, args[i])
                mask |= owned << i
                parts.append(_selection_type(args[i], owned))
            types = tuple(parts)
        hit = PyDict_GetItemWithError(self.by_types, _by_types_key(types, mask))
        if hit is NULL:
            return self.selector.select(ctx, args)
        if n <= 3:
            self.cache = _remembered(self.cache, ta, tb, tc, _MASKS[mask], <object>hit)
            if not self.copies_classes and (_heap_class(ta) or _heap_class(tb)
                                            or _heap_class(tc)):
                self.copies_classes = True
                _note_class_copy(self)
        return <object>hit


cdef object _call_tuple(object f, tuple args, dict kwargs):
    """``f(*args, **kwargs)`` by vectorcall."""
    cdef PyObject *stack[12]
    cdef Py_ssize_t n = len(args)
    cdef Py_ssize_t i
    if n > 12:
        return f(*args, **(kwargs or {}))
    for i in range(n):
        stack[i] = <PyObject *>args[i]
    if kwargs:
        return PyObject_VectorcallDict(f, stack, n, kwargs)
    return PyObject_Vectorcall(f, stack, n, NULL)


@cython.final
cdef class Protocol:
    """The compiled :class:`dispatch.Plan` of one callee: how each hook kind
    chooses its handler."""

    cdef Choice pre, exe, post, fb
    # dispatch.Plan.watching: its operations run by ``run_vector``.
    cdef readonly bint watching

    def __init__(self, plan):
        self.pre = Choice(plan.prehook)
        self.exe = Choice(plan.execute)
        self.post = Choice(plan.posthook)
        self.fb = Choice(plan.fallback)
        self.watching = plan.watching

    cdef object run_vector(self, Runtime runtime, object callee, object body,
                           object primitive, cassette_binary direct,
                           PyObject **args, Py_ssize_t nargs):
        """``run`` of a ``watching`` protocol, in a runtime that neither
        tags nor is nested, for the positional arguments ``args[:nargs]``
        (``nargs`` ≤ 9) laid out in C: each hook is called with its
        arguments on the C stack, and the body (or the primitive, its
        arguments routed first: ``direct`` when not NULL, the C function of
        an operator of two operands) with the caller's.  The same steps as
        ``run``, without building an argument tuple.  The caller holds
        the arguments (see ``cassette_holding_vectorcall``)."""
        cdef PyObject *stack[12]
        cdef Py_ssize_t i
        cdef PyObject *ctx = <PyObject *>runtime.ctx     # (borrowed: the runtime keeps it)
        for i in range(nargs):
            stack[3 + i] = args[i]
        stack[2] = <PyObject *>callee
        if self.pre.fixed is not None:
            stack[1] = ctx
            cassette_handler_call(<PyObject *>self.pre.fixed, &stack[1], nargs + 2, NULL)
        if body is not None:
            out = cassette_body_call(body, args, nargs)
        else:
            for i in range(nargs):
                cassette_route_one(args[i])
            if direct is not NULL:
                out = direct(<object>args[0], <object>args[1])
            else:
                out = cassette_primitive_call_vector(primitive, args, nargs)
        if self.post.fixed is not None:
            stack[0] = ctx
            stack[1] = <PyObject *>out
            cassette_handler_call(<PyObject *>self.post.fixed, stack, nargs + 3, NULL)
        return out

    cdef object run(self, Runtime runtime, object callee, object body,
                    object primitive, tuple args, dict kwargs, object operation=None):
        """The protocol of one operation (reference §3.2).  ``operation``: the
        name of the operation a site runs, whose body is the primitive
        itself when Python code of the program implements it (decided only
        when it matters: a fallback handler or tagging would otherwise see
        it)."""
        cdef object ctx = runtime.ctx
        cdef object handler
        cdef object out = _OverdubInstead
        handler = self.pre.select(runtime._tag, ctx, args)
        if handler is not None:
            runtime.invoke(handler, ctx, callee, None, None, 2, args, kwargs)
        handler = self.exe.select(runtime._tag, ctx, args)
        if handler is not None:
            out = runtime.invoke(handler, ctx, callee, None, None, 2, args, kwargs)
        if out is _OverdubInstead:
            out = self.overdub_instead(runtime, callee, body, primitive, args, kwargs, operation)
        handler = self.post.select(runtime._tag, ctx, args)
        if handler is not None:
            runtime.invoke(handler, ctx, out, callee, None, 3, args, kwargs)
        return out

    cdef object overdub_instead(self, Runtime runtime, object callee, object body,
                                object primitive, tuple args, dict kwargs, object operation):
        """What runs when no ``execute`` handler ran or it returned
        ``OverdubInstead``: the body, overdubbed, or else the fallback."""
        cdef object handler
        if body is not None:
            return cassette_credited_call(body, args, kwargs)
        handler = self.fb.select(runtime._tag, runtime.ctx, args)
        if ((handler is not None or (runtime._tagging and _any_tagged(args)))
                and operation is not None and not _all_builtin(args)
                and _operation_has_body(operation, args)):
            return _call_tuple(primitive, args, kwargs)
        if handler is not None:
            return runtime.invoke(handler, runtime.ctx, callee, None, None, 2, args, kwargs)
        return runtime.primitive(callee, primitive, args, kwargs)
