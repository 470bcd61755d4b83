"""Names for callees and short reprs for values, made without running user code.

A tracer sees the program's own objects, and looking at them must not change
what the program does: a user-defined ``__repr__``, ``__getattr__``,
``__hash__`` or ``__len__`` could print, raise, recurse or mutate.  So this
module reads only what the interpreter keeps in C: a value's exact type, the
code objects' names, the ``__qualname__``/``__module__`` slots of classes, the contents
of builtin containers.  A value whose class is not builtin is shown as
``<TypeName>`` (``<TypeName object>`` when its class keeps ``object``'s own
``__repr__``), never by calling its ``repr``.

``callee_name(f)`` names what a hook sees as the callee (``fib``,
``Body.advance``, ``len``, ``list.append``, ``operator.mul``);
``callee_site(f)`` gives its file and first line when it is a Python
function; ``short_repr(value)`` is at most about ``WIDTH`` characters.
"""

import functools
import operator
import types
import weakref

from ..callables import HEAPTYPE_FLAG, lookup_on_type, type_flags

WIDTH = 60
_ITEMS = 4          # elements shown of a container
_DEPTH = 2          # levels of nested containers shown

_type_qualname = type.__dict__["__qualname__"].__get__
_type_module = type.__dict__["__module__"].__get__
_dict_get = dict.get
_partial = functools.partial
_partial_func = functools.partial.func.__get__
_FunctionType = types.FunctionType
BUILTIN_CALLABLE_TYPES = (types.BuiltinFunctionType, types.MethodDescriptorType,
                          types.WrapperDescriptorType, types.MethodWrapperType,
                          types.ClassMethodDescriptorType, types.GetSetDescriptorType)

#: The callees of the operator rows of reference §3.1 (everything hooks see
#: that is not a call the program wrote), by the name a report gives them.
OPERATIONS = {
    callee: ("operator." + callee.__name__.rstrip("_")) if callee.__module__ == "_operator"
    else callee.__name__
    for callee in (
        operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
        operator.mod, operator.pow, operator.matmul, operator.lshift, operator.rshift,
        operator.and_, operator.or_, operator.xor,
        operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
        operator.imod, operator.ipow, operator.imatmul, operator.ilshift, operator.irshift,
        operator.iand, operator.ior, operator.ixor,
        operator.neg, operator.pos, operator.invert,
        operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge,
        operator.contains, operator.not_,
        operator.getitem, operator.setitem, operator.delitem,
        getattr, setattr, delattr, iter, next)
}


def module_of(cls):
    """``cls.__module__`` as ``type`` stores it."""
    return _type_module(cls)


def type_name(cls):
    """``cls.__qualname__`` as ``type`` stores it (a metaclass cannot intercept it)."""
    return _type_qualname(cls)


def _qualified(module, qualname):
    if module in (None, "builtins", "__main__"):
        return qualname
    if module == "_operator":
        module = "operator"
    return f"{module}.{qualname}"


def function_module(f):
    """The module a Python function was defined in: its globals'
    ``__name__`` (``f.__module__`` is what ``functools.wraps`` copies from
    the function wrapped), read without running program code."""
    name = _dict_get(f.__globals__, "__name__")
    return name if type(name) is str else None


def code_qualname(code):
    """``code``'s qualified name (``co_qualname``; 3.11 on)."""
    return code.co_qualname


def code_name(module, code):
    """How a report names the function of ``code`` defined in ``module``
    (a name, or None)."""
    return _qualified(module, code_qualname(code))


#: Builtins that live as long as the interpreter's module or type they
#: belong to: a report may keep one and tell it by its identity.
_LASTING_TYPES = (types.MethodDescriptorType, types.WrapperDescriptorType,
                  types.ClassMethodDescriptorType, types.GetSetDescriptorType)
_BuiltinFunctionType = types.BuiltinFunctionType
_OWNERS_THAT_LAST = (types.ModuleType, type(None))


def lasts(f):
    """Whether callee ``f`` lives as long as the interpreter's module or
    C type it belongs to (a module's builtin function, a C method): a
    report may keep it and key it by ``id``.  A class, a callable object, a
    builtin bound to an object — what the program makes and drops — it may
    not: keeping one would keep the program's object alive, and an ``id``
    is reused once its object dies."""
    kind = type(f)
    if kind in _LASTING_TYPES:
        return not (type_flags(f.__objclass__) & HEAPTYPE_FLAG)
    return kind is _BuiltinFunctionType and type(f.__self__) in _OWNERS_THAT_LAST


def callee_key(f):
    """How a report tells callee ``f`` apart without keeping it: a
    function by its code, a callee that :func:`lasts` by its ``id``,
    anything else by its kind and name."""
    if type(f) is _FunctionType:
        return f.__code__
    return id(f) if lasts(f) else (type(f), callee_name(f))


def callee_name(f):
    """A readable name for a callee, read from C slots only.  A Python
    function is named from its code and the module it was defined in, never
    from its ``__qualname__``: a ``functools.wraps`` wrapper is the
    wrapper, and every function of one code gets one name."""
    kind = type(f)
    if kind is _FunctionType:
        return code_name(function_module(f), f.__code__)
    operation = OPERATIONS.get(f) if kind is types.BuiltinFunctionType else None
    if operation is not None:
        return operation
    if issubclass(kind, BUILTIN_CALLABLE_TYPES):
        owner = getattr(f, "__objclass__", None)
        if owner is not None and issubclass(type(owner), type):
            return _qualified(_type_module(owner), f"{_type_qualname(owner)}.{f.__name__}")
        module = getattr(f, "__module__", None) if kind is types.BuiltinFunctionType else None
        return _qualified(module if type(module) is str else None, f.__qualname__)
    if issubclass(kind, type):
        return _qualified(_type_module(f), _type_qualname(f))
    return instance_name(f, kind)


def instance_name(f, kind, depth=0):
    """The name of a callable instance: a ``functools.partial`` by its
    function's; one whose ``__dict__`` (read through the interpreter's own
    descriptor, never a property of the program's) holds a
    ``__qualname__`` or ``__name__`` — numpy's functions, networkx's
    dispatchers, ``functools.wraps`` on an instance — by it; otherwise
    ``<Type instance>``."""
    if kind is _partial and depth < 8:
        inner = _partial_func(f)
        inner_kind = type(inner)
        inner_name = (instance_name(inner, inner_kind, depth + 1)
                      if inner_kind is _partial else callee_name(inner))
        return f"partial({inner_name})"
    namespace = _instance_dict(f, kind)
    if namespace is not None:
        name = _dict_get(namespace, "__qualname__")
        if type(name) is not str:
            name = _dict_get(namespace, "__name__")
        if type(name) is str:
            module = _dict_get(namespace, "__module__")
            return _qualified(module if type(module) is str else None, name)
    if not type_flags(kind) & HEAPTYPE_FLAG:
        # A class written in C (numpy's ufunc): its own descriptors are C too.
        for attribute in ("__qualname__", "__name__"):
            descriptor = lookup_on_type(kind, attribute)
            if type(descriptor) in (types.GetSetDescriptorType, types.MemberDescriptorType):
                name = descriptor.__get__(f, kind)
                if type(name) is str:
                    return _qualified(_type_module(kind), name)
    return f"<{_type_qualname(kind)} instance>"


def _instance_dict(f, kind):
    """``f.__dict__`` when the class's ``__dict__`` is the interpreter's
    descriptor, else None."""
    descriptor = lookup_on_type(kind, "__dict__")
    if type(descriptor) is not types.GetSetDescriptorType:
        return None
    namespace = descriptor.__get__(f, kind)
    return namespace if type(namespace) is dict else None


def callee_site(f):
    """``(file, first line)`` of a Python function, else ``(None, None)``."""
    if type(f) is _FunctionType:
        code = f.__code__
        return code.co_filename, code.co_firstlineno
    return None, None


def operation_name(key):
    """How a report names an operation counted by ``key``, a tuple of the
    callee, the exact types of its positional arguments or, for
    ``getattr``/``setattr``/``delattr``, the object's type and the
    attribute name: ``operator.mul(float, float)``, ``getattr(Body, 'x')``.
    A name already (a child process's count, children.py) is itself."""
    if type(key) is str:
        return key
    f, *rest = key
    name = callee_name(f)
    if (f is getattr or f is setattr or f is delattr) and type(rest[-1]) is str:
        return f"{name}({type_name(rest[0])}, {rest[1]!r})"
    return f"{name}({', '.join(type_name(t) for t in rest)})"


def short_repr(value, width=WIDTH):
    """A repr of ``value`` that runs no user code and is at most about
    ``width`` characters long."""
    kind = type(value)
    if kind is float or kind is int and -10 ** 30 < value < 10 ** 30:
        return repr(value)                  # the commonest, and always short
    constant = _CONSTANT_REPRS.get(id(kind))
    if constant is not None and constant[0]() is kind:
        text = constant[1]                  # the next commonest: an instance of a class
    else:
        text = _repr(value, _DEPTH)
    return text if len(text) <= width else text[:width - 1] + "…"


def _repr(value, depth):
    kind = type(value)
    format = _FORMATS.get(id(kind))
    if format is not None:
        return format(value, depth)
    constant = _CONSTANT_REPRS.get(id(kind))
    if constant is not None and constant[0]() is kind:
        return constant[1]
    return _other_repr(value, kind)


def _int_repr(value, depth):
    if -10 ** 30 < value < 10 ** 30:
        return repr(value)
    return f"<int of {value.bit_length()} bits>"        # repr of a huge int can raise


def _text_repr(value, depth):
    return repr(value[:WIDTH]) + ("…" if len(value) > WIDTH else "")


def _plain_repr(value, depth):
    return repr(value)          # builtin types whose repr is short and runs no user code


def _module_repr(value, depth):
    return f"<module {value.__name__}>" if type(value.__name__) is str else "<module>"


def _other_repr(value, kind):
    """Classes, builtin callables, and instances of other classes: the last
    are named by their class only, and that text is kept per class."""
    if issubclass(kind, type):
        return f"<class {_type_qualname(value)}>"
    if issubclass(kind, BUILTIN_CALLABLE_TYPES):
        return f"<built-in {callee_name(value)}>"
    name = _type_qualname(kind)
    text = f"<{name} object>" if kind.__repr__ is object.__repr__ else f"<{name}>"
    try:
        _CONSTANT_REPRS[id(kind)] = (weakref.ref(kind), text)
    except TypeError:
        pass                    # a class that cannot be weakly referenced
    return text


def _container_repr(value, kind, depth):
    if depth == 0:
        return f"<{kind.__name__} of {len(value)}>"
    if kind is dict:
        items = [f"{_repr(k, depth - 1)}: {_repr(v, depth - 1)}"
                 for k, v in _first(dict.items(value))]
    else:
        items = [_repr(item, depth - 1) for item in _first(value)]
    if len(value) > _ITEMS:
        items.append(f"… {len(value) - _ITEMS} more")
    body = ", ".join(items)
    if kind is list:
        return f"[{body}]"
    if kind is tuple:
        return f"({body},)" if len(value) == 1 else f"({body})"
    if kind is dict or (kind is set and value):
        return "{" + body + "}"
    return f"{kind.__name__}({{{body}}})" if value else f"{kind.__name__}()"


def _container_repr_of(kind):
    return lambda value, depth: _container_repr(value, kind, depth)


def _first(iterable):
    out = []
    for item in iterable:
        if len(out) == _ITEMS:
            break
        out.append(item)
    return out



# Exact builtin types, by id (a metaclass could make hashing a class run code).
_FORMATS = {id(kind): format for kind, format in {
    int: _int_repr, float: _plain_repr, bool: _plain_repr, complex: _plain_repr,
    type(None): _plain_repr, type(Ellipsis): _plain_repr, range: _plain_repr,
    slice: _plain_repr, str: _text_repr, bytes: _text_repr,
    list: _container_repr_of(list), tuple: _container_repr_of(tuple),
    set: _container_repr_of(set), frozenset: _container_repr_of(frozenset),
    dict: _container_repr_of(dict), types.ModuleType: _module_repr,
    _FunctionType: lambda value, depth: f"<function {value.__qualname__}>",
}.items()}
_CONSTANT_REPRS = {}            # id(class) -> (weak reference to it, its instances' repr)
