"""What kind of callable something is: the decisions both runtimes share.

``split_bound`` says which callee hooks see for a call (reference §3.1: bound
methods are reported as the function found on the class with the object
first).  ``body_kind`` says whether cassette can run a callee's body
overdubbed (reference §3.3) and how.
"""

import _imp
import builtins
import ctypes
import dis
import functools
import gc
import inspect
import os
import re
import sys
import types
import weakref

from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_BuiltinFunctionType = types.BuiltinFunctionType
_CO_VARARGS = inspect.CO_VARARGS
_CO_VARKEYWORDS = inspect.CO_VARKEYWORDS
_ClassMethodDescriptorType = types.ClassMethodDescriptorType
_WrapperDescriptorType = types.WrapperDescriptorType
_c_void_p = ctypes.c_void_p
_get_instructions = dis.get_instructions
_get_objects = gc.get_objects
_modules = sys.modules
_partial = functools.partial
_path_dirname = os.path.dirname
_ref = weakref.ref
_sep = os.sep
_sizeof = ctypes.sizeof

#: The code flags of functions whose frames can outlive a call (generators,
#: coroutines, async generators): suspended, they run again later.
SUSPENDING = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR

BuiltinMethodType = types.BuiltinMethodType
#: The builtins of methods that know their defining class (``METH_METHOD``,
#: a subtype of ``BuiltinMethodType``: ``re.Pattern.match`` bound to a
#: pattern on 3.12+), which behave as builtins in every other way.
BuiltinCMethodType = type(re.compile("").match)
FunctionType = types.FunctionType
MethodType = types.MethodType
ModuleType = types.ModuleType
MethodWrapperType = types.MethodWrapperType

#: ``Py_TPFLAGS_METHOD_DESCRIPTOR``: calling ``descr.__get__(obj)(*args)`` is
#: the same as ``descr(obj, *args)``.
METHOD_DESCRIPTOR_FLAG = 1 << 17
#: ``Py_TPFLAGS_HEAPTYPE``: a class made by Python code (not a C type).
HEAPTYPE_FLAG = 1 << 9
#: ``Py_TPFLAGS_IMMUTABLETYPE``: a class whose attributes cannot be set.
IMMUTABLETYPE_FLAG = 1 << 8
#: ``Py_TPFLAGS_TYPE_SUBCLASS``: instances are classes.
TYPE_SUBCLASS_FLAG = 1 << 31
#: The methods that make an object found on a class a descriptor.
DESCRIPTOR_METHODS = ("__get__", "__set__", "__delete__")

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class _NoSelf:
    __slots__ = ()

    def __repr__(self):
        return "NO_SELF"


NO_SELF = _NoSelf()


def lookup_on_type(tp, name):
    """``_PyType_Lookup``: the attribute ``name`` found in the ``__dict__`` of
    the classes of ``tp.__mro__``, without invoking descriptors, or None."""
    for klass in class_mro(tp):
        # "Absent" is the fresh mapping proxy itself: a class may hold any
        # object a module of cassette holds (NO_SELF was one).
        namespace = class_dict(klass)
        found = namespace.get(name, namespace)
        if found is not namespace:
            return found
    return None


# Static reads of a class's C-level fields: ``cls.__dict__`` and the like
# would run a metaclass's ``__getattribute__`` (program code).
_DICT_OF_CLASS = type.__dict__["__dict__"].__get__
_FLAGS_OF_CLASS = type.__dict__["__flags__"].__get__
_MRO_OF_CLASS = type.__dict__["__mro__"].__get__


def class_dict(cls):
    """``cls.__dict__`` as the class holds it (no metaclass attribute can
    shadow it, no program code runs)."""
    return _DICT_OF_CLASS(cls)


def type_flags(cls):
    """``cls.__flags__``, read without running program code."""
    return _FLAGS_OF_CLASS(cls)


def class_mro(cls):
    """``cls.__mro__``, read without running program code (``(cls,)``
    while a metaclass is still computing it)."""
    return _MRO_OF_CLASS(cls) or (cls,)


def static_attribute(obj, name, default=None):
    """``getattr(obj, name, default)`` when reading it runs no code of the
    program, else ``default`` (of a class, only what its metaclass
    defines: ``__qualname__``, ``__module__`` …).  Cassette's own
    introspection reads the
    program's objects only this way (a mock's ``__class__`` property, a
    deprecated alias's ``__getattribute__`` must not run because cassette
    looked)."""
    kind = type(obj)
    if type_flags(kind) & TYPE_SUBCLASS_FLAG:
        found = lookup_on_type(kind, name)
        if found is None or type_flags(type(found)) & HEAPTYPE_FLAG or type_flags(kind) & HEAPTYPE_FLAG and (
                lookup_on_type(kind, "__getattribute__") is not type.__dict__["__getattribute__"]):
            return default
        try:
            return found.__get__(obj, kind)
        except Exception:
            return default
    if not reading_runs_no_python(kind, name):
        return default
    try:
        return getattr(obj, name, default)
    except Exception:
        return default


def is_class(obj):
    """True when ``obj`` is a class, decided from its type alone (unlike
    ``isinstance``, which may run the program's ``__class__``)."""
    return bool(type_flags(type(obj)) & TYPE_SUBCLASS_FLAG)


def computed_mro(cls):
    """``cls.__mro__`` as the class holds it (no metaclass attribute can
    shadow it), or None while a metaclass is computing it."""
    return _MRO_OF_CLASS(cls)


def is_method_descriptor(obj):
    """True for functions and C method descriptors: things that, found on a
    class, are called with the instance as first argument."""
    return bool(type_flags(type(obj)) & METHOD_DESCRIPTOR_FLAG)


def split_bound(f):
    """``(callee, self)`` for a bound callable, where ``callee`` is what hooks
    see and what handlers are registered for, and ``callee(self, *args)``
    makes the same call; ``(f, NO_SELF)`` for everything else.

    * bound methods -> their ``__func__`` and ``__self__``;
    * builtins bound to an instance (``[].append``, ``(1).__add__``) -> the
      descriptor on the instance's class (``list.append``, ``int.__add__``);
    * builtin class methods bound to a class (``dict.fromkeys``, fresh on
      every access) -> the class-method descriptor in the class dict;
    * methods of a metaclass bound to a class (``int.mro``) -> the
      descriptor on the metaclass (``type.mro``).
    """
    kind = type(f)
    if kind is MethodType:
        return f.__func__, f.__self__
    if kind is BuiltinMethodType or kind is MethodWrapperType or kind is BuiltinCMethodType:
        owner = f.__self__
        if owner is None or type(owner) is ModuleType:
            return f, NO_SELF
        descriptor = _builtin_descriptor(f, owner)
        if descriptor is not None:
            return descriptor, owner
    return f, NO_SELF


_INSTANCE_DESCRIPTORS = (types.MethodDescriptorType, types.WrapperDescriptorType)
# (id(class), name, bound to a class?) -> (weak reference to the class,
# the descriptors a builtin of that name bound to it or to its instance may
# be made from): weak, so that no class of the program is kept alive.
_descriptor_cache = {}
_DESCRIPTOR_CACHE_MAX = 4096


def forget_descriptors():
    """Drop cached descriptor look-ups (classes may have changed)."""
    _descriptor_cache.clear()


def _builtin_descriptor(f, owner):
    """The descriptor a builtin bound to ``owner`` was made from, or None.

    Candidates are the descriptors of that name along the class's MRO (and
    its metaclass's, for a builtin bound to a class); the one whose binding
    to ``owner`` equals ``f`` is it (``super().append`` binds ``list``'s even
    when a subclass shadows ``append``)."""
    name = f.__name__
    owner_is_type = is_class(owner)
    cls = owner if owner_is_type else type(owner)
    key = (id(cls), name, owner_is_type)
    owner_mro = computed_mro(owner) if owner_is_type else ()
    if owner_mro is None:           # being computed: not a state to cache
        key, owner_mro = None, (owner,)
    known = None if key is None else _descriptor_cache.get(key)
    candidates = known[1] if known is not None and known[0]() is cls else None
    if candidates is None:
        # (descriptor, bound to the instance): bound as
        # ``descriptor.__get__(owner, type(owner))`` or, for a class
        # method, ``descriptor.__get__(None, owner)``.
        candidates = []
        if owner_is_type:
            for klass in owner_mro:
                found = class_dict(klass).get(name)
                if type(found) is _ClassMethodDescriptorType:
                    candidates.append((found, False))
        for klass in class_mro(type(owner)):
            found = class_dict(klass).get(name)
            if isinstance(found, _INSTANCE_DESCRIPTORS):
                candidates.append((found, True))
        candidates = tuple(candidates)
        if key is not None:
            if len(_descriptor_cache) >= _DESCRIPTOR_CACHE_MAX:
                _descriptor_cache.clear()
            _descriptor_cache[key] = (_ref(cls), candidates)
    for descriptor, on_instance in candidates:
        bound = (descriptor.__get__(owner, type(owner)) if on_instance
                 else descriptor.__get__(None, owner))
        if bound == f:
            return descriptor
    return None


def with_positional_parameters(handler, count):
    """``handler`` with its first ``count`` parameters made positional-only.

    Handlers are written ``def prehook(self, f, *args, **kwargs)``; a program
    that passes a keyword argument named ``self`` or ``f`` (``"…".format(
    **locals())`` inside a method does) would otherwise collide with them.
    Positional-only parameters leave such keywords to ``**kwargs``.  Returns
    ``handler`` itself when it is not a plain function or has fewer
    positional parameters.
    """
    if type(handler) is not FunctionType:
        return handler
    code = handler.__code__
    if code.co_argcount < count or code.co_posonlyargcount >= count:
        return handler
    clone = FunctionType(
        code.replace(co_posonlyargcount=count), handler.__globals__,
        handler.__name__, handler.__defaults__, handler.__closure__,
    )
    clone.__kwdefaults__ = handler.__kwdefaults__
    clone.__qualname__ = handler.__qualname__
    clone.__dict__.update(handler.__dict__)
    clone.__wrapped__ = handler
    return clone


_IGNORED_OPCODES = frozenset({"RESUME", "NOP", "CACHE", "EXTENDED_ARG"})


def does_nothing(handler, fixed):
    """True when calling ``handler`` with up to ``fixed`` positional
    arguments followed by any others has no effect: a plain function whose
    body only returns None and whose signature accepts any arguments.  Such
    a hook is skipped entirely, as Cassette.jl's compiler inlines it away."""
    handler = getattr(handler, "__wrapped__", handler)
    if type(handler) is not FunctionType:
        return False
    code = handler.__code__
    accepts_anything = (
        code.co_flags & _CO_VARARGS and code.co_flags & _CO_VARKEYWORDS
        and code.co_argcount <= fixed and not code.co_kwonlyargcount
        and not code.co_freevars and not code.co_cellvars
        and not code.co_flags & SUSPENDING
    )
    if not accepts_anything:
        return False
    body = [i for i in _get_instructions(code) if i.opname not in _IGNORED_OPCODES]
    if len(body) == 1:
        return body[0].opname == "RETURN_CONST" and body[0].argval is None
    if len(body) == 2:
        # (3.15 loads None with LOAD_COMMON_CONSTANT.)
        return (body[0].opname in ("LOAD_CONST", "LOAD_COMMON_CONSTANT")
                and body[0].argval is None
                and body[1].opname == "RETURN_VALUE")
    return False


def is_library_code(code):
    """True for code that belongs to cassette itself (never overdubbed), the
    Cython core's traceback entries included."""
    filename = code.co_filename
    try:
        return _library_files[filename]
    except KeyError:
        pass
    if len(_library_files) > 4096:
        _library_files.clear()
    directory = _path_dirname(filename)
    answer = _library_files[filename] = (directory == _PACKAGE_DIR
                                         or directory.startswith(_PACKAGE_DIR + _sep)
                                         or filename.startswith(_CORE_SOURCES))
    return answer


_library_files = {}     # co_filename -> is_library_code's answer (the core reads it: never rebound)


_acting_for_program = {}       # code object -> None, in marking order


def acts_for_program(function):
    """Mark one of the library's functions as acting for the program: it
    is a body (reference §3.3) that calls the program's code on the program's
    behalf — not machinery deciding what to do, nor a runner of handlers.
    Code the interpreter calls implicitly under such a function belongs to
    the program that called it (it is routed to that program's runtime and
    counted as the program's by the escape counter).  Returns ``function``."""
    _acting_for_program[function.__code__] = None
    return function


def acting_for_program_codes():
    """The code objects of the functions marked by :func:`acts_for_program`."""
    return tuple(_acting_for_program)


# Cython names the core's traceback entries by the relative paths of its
# sources: the module file and the parts in _core_src/.
_CORE_SOURCES = (os.path.join("cassette", "_core."),
                 os.path.join("cassette", "_core_src", ""))


def drop_library_entries(exception):
    """Remove the leading entries of cassette's own frames from
    ``exception``'s traceback.

    Called, before re-raising with a bare ``raise``, by the library frames
    the program calls into: the exception entered them last, so their
    entries (and those of library frames they called) lead the traceback,
    and a bare ``raise`` adds none.  The program then sees the traceback it
    would see plainly (reference §3.4)."""
    exception.__traceback__ = library_entries_dropped(exception.__traceback__)


def library_entries_dropped(tb):
    """``tb`` past its leading entries of cassette's own frames (None when
    it has only those)."""
    while tb is not None and is_library_code(tb.tb_frame.f_code):
        tb = tb.tb_next
    return tb


def remove_library_entries(exception):
    """Remove every entry of cassette's own frames (Python and Cython) from
    ``exception``'s traceback, wherever they are in it.  Done where an
    exception leaves ``overdub`` and where the program catches one."""
    kept = []
    tb = exception.__traceback__
    while tb is not None:
        if not is_library_code(tb.tb_frame.f_code):
            kept.append(tb)
        tb = tb.tb_next
    for tb, following in zip(kept, kept[1:] + [None]):
        tb.tb_next = following
    exception.__traceback__ = kept[0] if kept else None


# Kinds of body.
FUNCTION = "function"              # a Python function: run its rewritten code
INSTANTIATION = "instantiation"    # a class: __new__ then __init__, each an operation
METACLASS_CALL = "metaclass_call"  # a class whose metaclass defines __call__ in Python
TYPE_CALL = "type_call"            # type.__call__(cls, ...): instantiate cls (super().__call__
                                   # in a metaclass __call__)
PARTIAL = "partial"                # functools.partial: call .func with merged arguments
CALLABLE_INSTANCE = "instance"     # an instance whose class defines __call__ in Python
NESTED_OVERDUB = "nested"          # cassette.overdub itself (overdubbing an overdub)
SOURCE = "source"                  # exec / eval: run the code they are given rewritten
BUILD_CLASS = "build_class"        # __build_class__: run the class body rewritten
ARRAY_FUNCTION = "array_function"  # a numpy dispatcher of a Python implementation: numpy's
                                   # __array_function__ protocol, overdubbed
EXTENSION_LOAD = "extension"       # _imp.create_dynamic / exec_dynamic: a compiled module
                                   # loads, what it fetches routed
FETCHING_CALL = "fetching"         # breakpoint: fetches what it calls by name at each
                                   # call, what it fetches routed

#: Callees that read their caller's frame; they run as called, never from a
#: trampoline frame, and hooks do not see them.  (``exec``/``eval`` read it
#: too, but have a body that finds the program's frame itself.)
FRAME_SENSITIVE = (super, locals, vars, dir, globals, sys._getframe,
                   types.FunctionType) + (
    (sys._getframemodulename,) if hasattr(sys, "_getframemodulename") else ())

_SOURCE_RUNNERS = (exec, eval)
_EXTENSION_LOADERS = (_imp.create_dynamic, _imp.exec_dynamic)
_FETCHING_CALLS = (builtins.breakpoint, sys.__breakpointhook__)
_BUILD_CLASS = builtins.__build_class__
_TYPE_CALL = type.__dict__["__call__"]

_nested_entry_points = []


def is_one_of(obj, candidates):
    """``obj in candidates`` by identity (never runs ``__eq__``/``__hash__``)."""
    for candidate in candidates:
        if obj is candidate:
            return True
    return False


def is_frame_sensitive(callee):
    return is_one_of(callee, FRAME_SENSITIVE)


#: The classes of runtimes (the core's and the pure-Python one register
#: theirs at import): code rewritten for a runtime holds it as its last
#: constant.
_runtime_classes = ()


def register_runtime_class(cls):
    """Note ``cls`` as a runtime class (see :func:`runs_rewritten_code`)."""
    global _runtime_classes
    if cls not in _runtime_classes:
        _runtime_classes += (cls,)
    return cls


def runtime_of_code(code):
    """The runtime ``code`` was rewritten for (its last constant), or None."""
    consts = code.co_consts
    if consts and type(consts[-1]) in _runtime_classes:
        return consts[-1]
    return None


def runs_rewritten_code(f):
    """Whether ``f`` is a Python function whose code is code rewritten for
    a runtime: one of cassette's bodies, which a program can reach (through
    ``gc.get_objects()``, a traceback's frames) and call.  It runs
    overdubbed already, by its runtime: rewriting it again would route
    cassette's own slots as the program's operations, and routing it would
    rewrite it on its next call from C (so again on every round)."""
    return type(f) is FunctionType and runtime_of_code(f.__code__) is not None


def register_nested_entry(f):
    """Mark ``f`` (``cassette.overdub``) as the entry point whose body is a
    nested overdub."""
    _nested_entry_points.append(f)
    return f


def _python_function(obj):
    """The Python function ``obj`` (possibly a staticmethod) stands for, or
    None; cassette's own functions (its trampoline objects' ``__call__``)
    never count: they are primitives, not bodies."""
    if type(obj) is staticmethod:
        obj = obj.__func__
    if type(obj) is not FunctionType or is_library_code(obj.__code__):
        return None
    return obj


#: The second element of :func:`call_target`'s answer for a ``__call__``
#: that is a descriptor of another kind: it binds when the call is made.
BIND_AT_CALL = "bind at call"


def call_target(obj):
    """What calling ``obj`` calls when its class defines ``__call__``, as the
    interpreter decides it (``slot_tp_call``): ``(target, first)`` where the
    call ``obj(*args)`` is ``target(first, *args)``, or ``target(*args)`` when
    ``first`` is :data:`NO_SELF`.  The class attribute is found statically,
    like every look-up here:

    * a function or other method descriptor: ``(found, obj)``;
    * a ``staticmethod``: ``(found.__func__, NO_SELF)``;
    * a ``classmethod``: ``(found.__func__, type(obj))``;
    * any other descriptor (its class defines ``__get__``):
      ``(found, BIND_AT_CALL)``: the call binds ``found.__get__(obj,
      type(obj))`` and calls what that returns;
    * anything else (a builtin, a partial): ``(found, NO_SELF)``.

    None when the class defines no ``__call__``."""
    found = lookup_on_type(type(obj), "__call__")
    if found is None:
        return None
    kind = type(found)
    if kind is staticmethod:
        return found.__func__, NO_SELF
    if kind is classmethod:
        return found.__func__, type(obj)
    if type_flags(kind) & METHOD_DESCRIPTOR_FLAG:
        return found, obj
    if lookup_on_type(kind, "__get__") is not None:
        return found, BIND_AT_CALL
    return found, NO_SELF


def _has_callable_body(obj):
    """True when calling ``obj`` through its class's ``__call__`` runs code
    cassette can overdub: a Python function, or a descriptor whose
    ``__get__`` is Python, or anything :func:`body_kind` gives a body
    (not when the class defines no ``__call__``: calling ``obj`` raises)."""
    found = call_target(obj)
    if found is None:
        return False
    target, first = found
    if first is BIND_AT_CALL:
        return bool(type_flags(type(target)) & HEAPTYPE_FLAG)
    if target is obj:                   # a class whose __call__ is its own instance
        return False
    if type(target) is FunctionType:
        return not is_library_code(target.__code__)
    return not is_method_descriptor(target) and body_kind(target) is not None


# -- C wrappers of Python functions ---------------------------------------------
#
# The rule: a C object that wraps a Python function -- a decorator's wrapper
# (``functools.lru_cache``: ``__wrapped__``), a descriptor that calls a
# function (pandas' ``cache_readonly``: ``fget``), numpy's
# ``_ArrayFunctionDispatcher`` -- calls that function from C.  Cassette finds
# the functions such an object calls (:func:`wrapped_functions`, reading
# attributes only where that runs no Python code) and routes them, so that,
# called on behalf of overdubbed code, they run overdubbed.  numpy's
# dispatchers with a Python implementation go further: they have a body
# (:data:`ARRAY_FUNCTION`) that runs numpy's ``__array_function__`` protocol
# overdubbed, so hooks see ``np.polyfit(...)`` and then its operations.

#: Attributes by which C wrappers expose the Python functions they call.
WRAPPED_FUNCTION_ATTRIBUTES = ("__wrapped__", "_implementation", "fget", "fset", "fdel", "func")


def reading_runs_no_python(kind, name):
    """True when reading attribute ``name`` of an instance of ``kind`` runs
    no code of the program (no Python ``__getattribute__``/``__getattr__``,
    no Python descriptor of that name)."""
    if type_flags(kind) & TYPE_SUBCLASS_FLAG:
        return False
    getattribute = lookup_on_type(kind, "__getattribute__")
    if getattribute is not object.__dict__["__getattribute__"] and (
            type(getattribute) is not _WrapperDescriptorType):
        return False
    if lookup_on_type(kind, "__getattr__") is not None:
        return False
    found = lookup_on_type(kind, name)
    return found is None or not type_flags(type(found)) & HEAPTYPE_FLAG and type(found) is not property


def wrapped_functions(obj):
    """The Python functions C object ``obj`` exposes as one it calls (see
    the rule above); empty for a Python function, a class or a module."""
    kind = type(obj)
    plan = _wrapper_plans.get(id(kind))
    if plan is None or plan[0]() is not kind:
        plan = _wrapper_plan(kind)
    _, names, referents, dispatcher = plan
    if not (names or referents or dispatcher):
        return ()
    found = []
    for name in names:
        try:
            value = getattr(obj, name, None)
        except Exception:
            continue
        value = _function_called(value)
        if value is not None and value not in found:
            found.append(value)
    if dispatcher:
        relevant = array_function_relevant(obj)
        if relevant is not None and relevant not in found:
            found.append(relevant)
    if referents:
        # A C object that keeps a function it does not expose
        # (functools.cmp_to_key's): its garbage-collector traversal shows it.
        for value in live_referents(obj):
            value = _function_called(value)
            if value is not None and value not in found:
                found.append(value)
    return tuple(found)


def _function_called(value):
    """The Python function calling ``value`` runs: ``value`` itself, or the
    function of a bound method (an ``lru_cache`` of ``obj.method``, as
    ``importlib.metadata``'s ``method_cache`` makes); else None."""
    if type(value) is FunctionType:
        return value
    if type(value) is MethodType and type(value.__func__) is FunctionType:
        return value.__func__
    return None


#: id(class) -> (weak reference to the class, names to read, read the
#: referents?, numpy dispatcher?); weak, so that no class of the program is
#: kept alive because cassette looked at one of its instances.
_wrapper_plans = {}


def _wrapper_plan(kind):
    """How :func:`wrapped_functions` looks at instances of ``kind``: the
    attributes it may read (reading them runs no program code), whether
    the garbage collector's referents are worth a look, whether they are
    numpy dispatchers.  Decided once per class."""
    if (kind in _WRAP_NOTHING or type_flags(kind) & TYPE_SUBCLASS_FLAG
            or ModuleType in class_mro(kind)):     # a module's __getattr__ is program code
        plan = (_ref(kind), (), False, False)
    else:
        names = tuple(name for name in WRAPPED_FUNCTION_ATTRIBUTES
                      if reading_runs_no_python(kind, name))
        plan = (_ref(kind), names, True, is_array_function_dispatcher_type(kind))
    if len(_wrapper_plans) >= 4096:
        _wrapper_plans.clear()
    _wrapper_plans[id(kind)] = plan
    return plan


def live_referents(obj):
    """What the garbage collector's traversal of ``obj`` visits: the C
    objects and module states routing looks into (only the Cython core
    routes).  ``gc.get_referents`` hands out whatever a traversal visits,
    and some visit objects that are not alive (3.12's ``_asyncio`` module
    state its free list, gh-122695, fixed in 3.12.6): handed out, they are
    freed a second time, and the free list becomes a cycle its next
    traversal runs round for ever.  The core replaces this function with
    ``_core.live_referents``, which leaves out every object whose
    reference count is 0."""
    return _gc_referents(obj)


_gc_referents = gc.get_referents

#: Types whose objects call no Python function they hold (containers hold
#: functions as data).
_WRAP_NOTHING = frozenset({
    FunctionType, types.GetSetDescriptorType, types.MemberDescriptorType,
    types.MethodDescriptorType, types.WrapperDescriptorType, types.BuiltinFunctionType,
    types.ClassMethodDescriptorType, types.MethodWrapperType, ModuleType, type(None), int, str,
    float, bool, bytes, tuple, dict, list, set, frozenset, types.SimpleNamespace,
    types.MappingProxyType,
})


def _array_function_dispatcher_type():
    for name in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        module = _modules.get(name)
        namespace = getattr(module, "__dict__", None) if type(module) is ModuleType else None
        found = None if namespace is None else namespace.get("_ArrayFunctionDispatcher")
        if type(found) is type:
            return found
    return None


def is_array_function_dispatcher_type(kind):
    """True for numpy's ``_ArrayFunctionDispatcher`` class."""
    return not type_flags(kind) & HEAPTYPE_FLAG and kind is _array_function_dispatcher_type()


def is_array_function_dispatcher(obj):
    """True for numpy's ``_ArrayFunctionDispatcher`` objects (``np.polyfit``)."""
    return is_array_function_dispatcher_type(type(obj))


_relevant_by_dispatcher = {}     # id(dispatcher) -> (dispatcher, function or None)
_functions_by_address = None     # id -> every Python function alive, built once when needed


def array_function_relevant(dispatcher):
    """The relevant-arguments function of numpy dispatcher ``dispatcher``
    (``_polyfit_dispatcher``), or None (not a dispatcher, a ``like=``
    function, or not found).  numpy keeps it in a C field it does not
    expose: the field just before the implementation's.  Its address is read
    there -- checked against the implementation's own address, which must
    sit next to it -- and matched with the functions alive; no pointer is
    ever followed."""
    if not is_array_function_dispatcher(dispatcher):
        return None
    entry = _relevant_by_dispatcher.get(id(dispatcher))
    if entry is not None and entry[0] is dispatcher:
        return entry[1]
    function = _find_relevant(dispatcher)
    if len(_relevant_by_dispatcher) >= 4096:
        _relevant_by_dispatcher.clear()
    _relevant_by_dispatcher[id(dispatcher)] = (dispatcher, function)
    return function


def _find_relevant(dispatcher):
    global _functions_by_address
    implementation = dispatcher._implementation
    size = min(8, type(dispatcher).__basicsize__ // _sizeof(_c_void_p))
    words = (_c_void_p * size).from_address(id(dispatcher))
    address = None
    for index in range(3, size):
        if words[index] == id(implementation):
            address = words[index - 1]
            break
    if not address:
        return None
    if type(implementation) is FunctionType:
        for value in implementation.__globals__.values():
            if id(value) == address and type(value) is FunctionType:
                return value
    # numpy's C functions (np.concatenate) have their relevant-arguments
    # function nowhere else: look among the functions alive, once (they all
    # exist from numpy's import on), weakly.
    reference = None if _functions_by_address is None else _functions_by_address.get(address)
    if reference is None:
        _functions_by_address = {id(f): _ref(f) for f in _get_objects()
                                 if type(f) is FunctionType}
        reference = _functions_by_address.get(address)
    function = None if reference is None else reference()
    return function if type(function) is FunctionType else None


def body_kind(callee):
    """How cassette runs ``callee``'s body overdubbed, or None for a primitive."""
    if is_one_of(callee, _nested_entry_points):
        return NESTED_OVERDUB
    kind = type(callee)
    if kind is FunctionType:
        return None if is_library_code(callee.__code__) else FUNCTION
    if callee is _TYPE_CALL:
        return TYPE_CALL
    if is_class(callee):
        if lookup_on_type(kind, "__call__") is not _TYPE_CALL:
            return METACLASS_CALL if _has_callable_body(callee) else None
        if (_python_function(lookup_on_type(callee, "__new__")) is not None
                or _python_function(lookup_on_type(callee, "__init__")) is not None):
            return INSTANTIATION
        return None
    if kind is _partial:
        return PARTIAL
    if kind is BuiltinMethodType:
        if is_one_of(callee, _SOURCE_RUNNERS):
            return SOURCE
        if callee is _BUILD_CLASS:
            return BUILD_CLASS
        if is_one_of(callee, _EXTENSION_LOADERS):
            return EXTENSION_LOAD
        if is_one_of(callee, _FETCHING_CALLS):
            return FETCHING_CALL
        return None
    if kind is MethodType:
        return None
    if is_array_function_dispatcher(callee):
        implementation = callee._implementation
        if type(implementation) is FunctionType and not is_library_code(implementation.__code__):
            return ARRAY_FUNCTION
        return None
    if type_flags(kind) & HEAPTYPE_FLAG and _has_callable_body(callee):
        return CALLABLE_INSTANCE
    return None


def instances_are_primitives(kind):
    """True when, as ``kind`` is now, every instance of it is decided alike,
    as a primitive: ``kind`` is not a metaclass, is none of the kinds
    :func:`split_bound`, :func:`is_frame_sensitive` and :func:`body_kind`
    treat by themselves, and its ``__call__`` is C (``json``'s ``Encoder``,
    ``operator.itemgetter``).  What a runtime calls for one then depends
    only on the handlers named for it (its plan) and on what it wraps
    (routed: ``routing.route_callee``).  A runtime keeping the answer keeps
    it while the class is unchanged (its version tag)."""
    return (not type_flags(kind) & TYPE_SUBCLASS_FLAG
            and kind not in _KINDS_DECIDED_APART
            and not is_array_function_dispatcher_type(kind)
            and type(lookup_on_type(kind, "__call__")) is _WrapperDescriptorType)


# The C types whose instances split_bound, is_frame_sensitive or body_kind
# tell apart (bound forms, functions, classes' own calls, partials).
_KINDS_DECIDED_APART = frozenset({
    FunctionType, MethodType, BuiltinMethodType, BuiltinCMethodType, MethodWrapperType,
    types.MethodDescriptorType, types.WrapperDescriptorType,
    types.ClassMethodDescriptorType, functools.partial, staticmethod, classmethod,
})


def resolution_key(f):
    """The key a runtime caches the target of ``f`` under: ``f``, and for
    a builtin its name too.  Builtins compare equal when they share their C
    function and their self, also when one is a class method and the other
    a static method (``xxsubtype.spamlist``'s ``classmeth`` and
    ``staticmeth``), which the interpreter calls differently.  (The Cython
    core adds the method definition itself, which a name stands for.)"""
    if type(f) is _BuiltinFunctionType or type(f) is BuiltinCMethodType:
        return (f, f.__name__)
    return f


def is_stable(f):
    """True when decisions about ``f`` may be cached by its identity: it is
    not a short-lived bound object, holds no user data that caching it would
    keep alive (closures hold cells, partials their arguments) and hashing it
    runs no Python code.  A class or closure-free function the program made
    at run time is stable too: runtimes drop what they cached for those when
    a collection of the older generations starts (:func:`lives_with_its_module`,
    ``cassette.lifetimes``)."""
    kind = type(f)
    if kind is FunctionType:
        return f.__closure__ is None
    if kind is type:
        return True
    if type_flags(kind) & TYPE_SUBCLASS_FLAG:
        # A class of another metaclass (ABCMeta, EnumType …): hashed and
        # compared as ``type`` does, unless its metaclass says otherwise.
        return (lookup_on_type(kind, "__hash__") is _TYPE_HASH
                and lookup_on_type(kind, "__eq__") is _TYPE_EQ)
    if kind is BuiltinMethodType or kind is BuiltinCMethodType:
        owner = f.__self__
        if owner is None or ModuleType in class_mro(type(owner)):
            return True
        # A builtin bound to a class and stored in its dict (``object.__new__``),
        # not one made afresh by each attribute access (``dict.fromkeys``).
        return is_class(owner) and class_dict(owner).get(f.__name__) is f
    if kind in _STABLE_TYPES:
        return True
    return hashed_by_identity(kind) and is_module_global(f)


def lives_with_its_module(obj):
    """True when ``obj``, a callee a runtime caches a decision for, lives as
    long as a loaded module, so that the cache — and a target referring to
    it — keeps alive nothing the program would have freed:

    * a function whose globals are a loaded module's namespace and that no
      call made (no ``<locals>`` in its qualified name);
    * a static class, or one its module reaches by its qualified name
      through the classes' own namespaces;
    * a builtin bound to such a class, to a module or to nothing, and every
      other callee but a builtin bound to an instance (builtins, method
      descriptors: the C types that own them live with their modules).

    A function ``exec`` made in a namespace of its own (``namedtuple``'s
    ``__new__``), a local class, a class a call made (``namedtuple``
    inside a function) and their builtins are not: the program can drop
    them."""
    kind = type(obj)
    if kind is FunctionType:
        return ("<locals>" not in obj.__qualname__
                and is_module_namespace(obj.__globals__))
    if kind is BuiltinMethodType or kind is BuiltinCMethodType:
        owner = obj.__self__
        if is_class(owner):
            return lives_with_its_module(owner)
        return owner is None or ModuleType in class_mro(type(owner))
    if not is_class(obj) or not type_flags(obj) & HEAPTYPE_FLAG:
        return True
    qualname = static_attribute(obj, "__qualname__")
    if type(qualname) is not str or "<locals>" in qualname:
        return False
    if _reaches(_loaded_module(static_attribute(obj, "__module__")), qualname, obj):
        return True
    # A module may name itself otherwise (_pydecimal says it is 'decimal',
    # for pickling): the module whose namespace its functions' globals are.
    for value in class_dict(obj).values():
        if type(value) is FunctionType:
            return _reaches(_module_of_namespace(value.__globals__), qualname, obj)
    return False


def dies_by_collection(obj):
    """True when ``obj``, which :func:`lives_with_its_module`, may still
    die once its module drops it, and then only by a collection: a class
    of the program (in a reference cycle: its own ``__mro__``), or a
    builtin bound to one.  Runtimes ask again about such entries when a
    collection starts (``cassette.lifetimes``); a function needs no asking:
    its entries hold it weakly."""
    kind = type(obj)
    if kind is BuiltinMethodType or kind is BuiltinCMethodType:
        obj = obj.__self__
    return is_class(obj) and bool(type_flags(obj) & HEAPTYPE_FLAG)


def class_lives_with_its_module(cls):
    """:func:`lives_with_its_module` of class ``cls``, remembered (by
    address, beside a weak reference, so as to keep no class alive) while
    ``cls`` lives."""
    if not type_flags(cls) & HEAPTYPE_FLAG:
        return True
    known = _classes_living.get(id(cls))
    if known is not None and known[0]() is cls:
        return known[1]
    answer = lives_with_its_module(cls)
    if len(_classes_living) >= 4096:
        _classes_living.clear()
    _classes_living[id(cls)] = (weakref.ref(cls), answer)
    return answer


_classes_living = {}    # id(class) -> (weak reference to it, lives_with_its_module's answer)


def _reaches(module, qualname, obj):
    """Whether ``module`` holds ``obj`` at ``qualname``, through the
    namespaces of the classes along the way."""
    if module is None:
        return False
    found = module
    namespace = _MODULE_DICT(module)
    for name in qualname.split("."):
        if not is_class(found) and found is not module:
            return False
        found = namespace.get(name)
        if found is None:
            return False
        if is_class(found):
            namespace = class_dict(found)
    return found is obj


_MODULE_DICT = ModuleType.__dict__["__dict__"].__get__


def may_be_cached_weakly(f):
    """True when a target made of function ``f``'s code, globals, cells and
    defaults, cached beside a weak reference to ``f`` (dropped when ``f``
    dies), cannot itself keep ``f`` alive (``cassette.lifetimes``): its
    globals are a loaded module's namespace (``exec``'s namespace of its own
    holds ``f``), its names are strings, and what its cells, defaults and
    keyword defaults hold is inert (:func:`is_inert`).  Anything else may
    reach ``f`` back — a cell holding ``self`` whose object holds ``f``
    (attrs' class builder), a recursive function's own cell, ``__class__``
    of a method using ``super()``, a default naming a registry that holds
    ``f`` — and is not looked through: the entry is then forgotten at
    collections instead."""
    if not is_module_namespace(f.__globals__):
        return False
    if type(f.__name__) is not str or type(f.__qualname__) is not str:
        return False
    for cell in f.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:          # empty
            continue
        if not is_inert(value):
            return False
    if not all(is_inert(value) for value in f.__defaults__ or ()):
        return False
    return all(is_inert(value) for value in (f.__kwdefaults__ or {}).values())


#: The types whose instances refer to no object of the program's.
INERT_TYPES = frozenset({type(None), bool, int, float, complex, str, bytes,
                         type(Ellipsis), type(NotImplemented), ModuleType})


def is_inert(value):
    """True when ``value``, held by a function, reaches no object the program can
    drop: a number, string or module, a builtin bound to no object or a
    module, or a class or function that lives with its module (what a
    module reaches lives as long as the module).  The Cython core's
    ``_inert`` says the same."""
    kind = type(value)
    if kind in INERT_TYPES:
        return True
    if kind is type or type_flags(kind) & TYPE_SUBCLASS_FLAG:
        return not type_flags(value) & HEAPTYPE_FLAG or lives_with_its_module(value)
    if kind is BuiltinMethodType:
        return value.__self__ is None or type(value.__self__) is ModuleType
    if kind is FunctionType:
        return lives_with_its_module(value)
    return False


def is_module_namespace(namespace):
    """True when ``namespace`` (a function's globals) is the ``__dict__``
    of a loaded module."""
    return _module_of_namespace(namespace) is not None


# id(the __dict__ of a module sys.modules holds) -> that module, as of when
# sys.modules held _namespaces_seen modules.
_namespaces = {}
_namespaces_seen = -1


def _module_of_namespace(namespace):
    """The loaded module whose ``__dict__`` is ``namespace``, or None: the
    module it names, or else (a module may name itself otherwise) the one
    found among those ``sys.modules`` holds."""
    global _namespaces_seen
    module = _loaded_module(dict.get(namespace, "__name__"))
    if module is not None and _MODULE_DICT(module) is namespace:
        return module
    module = _namespaces.get(id(namespace))
    if module is None and len(_modules) != _namespaces_seen:
        _namespaces.clear()
        for candidate in list(_modules.values()):
            if ModuleType in class_mro(type(candidate)):
                _namespaces[id(_MODULE_DICT(candidate))] = candidate
        _namespaces_seen = len(_modules)
        module = _namespaces.get(id(namespace))
    return module if module is not None and _MODULE_DICT(module) is namespace else None


def _loaded_module(name):
    """The module ``sys.modules`` holds under ``name``, or None."""
    if type(name) is not str:
        return None
    module = _modules.get(name)
    return module if ModuleType in class_mro(type(module)) else None


def is_unchangeable(cls):
    """True for a class whose attributes cannot be set: a static C type, or
    a heap type marked immutable (``functools._lru_cache_wrapper``)."""
    flags = type_flags(cls)
    return not flags & HEAPTYPE_FLAG or bool(flags & IMMUTABLETYPE_FLAG)


def hashed_by_identity(kind):
    """True for a C type that cannot change (static, or a heap type marked
    immutable: ``functools._lru_cache_wrapper``) whose instances hash and
    compare as ``object``'s do, by identity: a dictionary lookup of one runs
    no code (the core's ``cassette_hashed_by_identity`` says the same)."""
    return (is_unchangeable(kind)
            and lookup_on_type(kind, "__hash__") is _OBJECT_HASH
            and lookup_on_type(kind, "__eq__") is _OBJECT_EQ)


def is_module_global(obj):
    """True when ``obj`` is what its module's global of its own name holds
    (``numpy.add``, ``numpy.sum``): an object defined once, not one a
    program makes afresh (an ``operator.itemgetter(k)`` has no name)."""
    module = _modules.get(static_attribute(obj, "__module__"))
    name = static_attribute(obj, "__name__")
    if module is None or type(name) is not str:
        return False
    return type(module) is ModuleType and module.__dict__.get(name) is obj


# What ``type`` hashes and compares classes with (found along its MRO).
_TYPE_HASH = lookup_on_type(type, "__hash__")
_TYPE_EQ = lookup_on_type(type, "__eq__")
_OBJECT_HASH = lookup_on_type(object, "__hash__")
_OBJECT_EQ = lookup_on_type(object, "__eq__")

_STABLE_TYPES = frozenset({
    types.MethodDescriptorType, types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
})
