# The protocol of one operation: choosing the handler by operand types and
# own masks, and calling it (Protocol).
#
# Part of cassette/_core.pyx (included there; see its map).

cdef inline long _owned(object tag, object value) except -1:
    """1 when ``value`` is tagged with ``tag`` (its outermost tag), else 0."""
    return 1 if tag is not None and _tagged_by(value, tag) else 0


cdef tuple _MASKS = tuple(range(8))     # own masks of up to three operands


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


cdef object _select(object fixed, object selector, dict by_types, object tag, object ctx,
                    tuple args):
    """The handler of one hook kind for ``args``: the one that always wins,
    else the selector's answer — read from its cache by argument types when
    it has one (``Selector.by_types``, keyed as ``Selector.select`` keys it:
    the types, then the mask of the arguments tagged with ``tag``, the
    context's, when there are any), which spares calling ``select``."""
    cdef PyObject *hit
    cdef Py_ssize_t n, i
    cdef long mask = 0
    cdef long owned
    if fixed is not None:
        return fixed
    if selector is None:
        return None
    if by_types is not None:
        n = len(args)
        if tag is None:
            if n == 1:
                types = (type(args[0]),)
            elif n == 2:
                types = (type(args[0]), type(args[1]))
            else:
                types = tuple([type(args[i]) for i in range(n)])
        else:
            parts = []
            for i in range(n):
                owned = _owned(tag, args[i])
                mask |= owned << i
                parts.append(_selection_type(args[i], owned))
            types = tuple(parts)
        hit = PyDict_GetItemWithError(by_types, _by_types_key(types, mask))
        if hit is not NULL:
            return <object>hit
    return selector.select(ctx, args)


cdef object _call_prefixed(object f, object a, object b, object c, object d, int nprefix,
                           tuple args, dict kwargs):
    """``f(a, b[, c[, d]], *args, **kwargs)`` (``nprefix``: 0, 2, 3 or 4 of
    ``a, b, c, d``) without building an argument tuple."""
    cdef PyObject *stack[12]
    cdef Py_ssize_t n = len(args)
    cdef Py_ssize_t i
    if n + nprefix > 12:
        prefix = (a, b, c, d)[:nprefix]
        return f(*prefix, *args, **(kwargs or {}))
    stack[0] = <PyObject *>a
    stack[1] = <PyObject *>b
    if nprefix >= 3:
        stack[2] = <PyObject *>c
    if nprefix == 4:
        stack[3] = <PyObject *>d
    for i in range(n):
        stack[nprefix + i] = <PyObject *>args[i]
    if kwargs:
        return PyObject_VectorcallDict(f, stack, nprefix + n, kwargs)
    return PyObject_Vectorcall(f, stack, nprefix + n, NULL)


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


cdef class Protocol:
    """The compiled :class:`dispatch.Plan` of one callee: for each hook kind,
    the handler that always wins (``*_fixed``) or a selector."""

    cdef object pre_fixed, pre_sel, exe_fixed, exe_sel
    cdef object post_fixed, post_sel, fb_fixed, fb_sel
    cdef dict pre_types, exe_types, post_types, fb_types

    def __init__(self, plan):
        self.pre_fixed, self.pre_sel, self.pre_types = _split_selector(plan.prehook)
        self.exe_fixed, self.exe_sel, self.exe_types = _split_selector(plan.execute)
        self.post_fixed, self.post_sel, self.post_types = _split_selector(plan.posthook)
        self.fb_fixed, self.fb_sel, self.fb_types = _split_selector(plan.fallback)

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
        handler = _select(self.pre_fixed, self.pre_sel, self.pre_types, runtime._tag, ctx, args)
        if handler is not None:
            runtime.invoke(handler, ctx, callee, None, None, 2, args, kwargs)
        handler = _select(self.exe_fixed, self.exe_sel, self.exe_types, runtime._tag, ctx, args)
        if handler is not None:
            out = runtime.invoke(handler, ctx, callee, None, None, 2, args, kwargs)
        if out is _OverdubInstead:
            out = self.overdub_instead(runtime, callee, body, primitive, args, kwargs, operation)
        handler = _select(self.post_fixed, self.post_sel, self.post_types, runtime._tag, ctx, args)
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
        handler = _select(self.fb_fixed, self.fb_sel, self.fb_types, runtime._tag, runtime.ctx,
                          args)
        if ((handler is not None or (runtime._tagging and _any_tagged(args)))
                and operation is not None and not _all_builtin(args)
                and _operation_has_body(operation, args)):
            return _call_tuple(primitive, args, kwargs)
        if handler is not None:
            return runtime.invoke(handler, runtime.ctx, callee, None, None, 2, args, kwargs)
        return runtime.primitive(callee, primitive, args, kwargs)
