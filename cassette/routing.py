"""Which Python functions are routed, and when (reference §3.3: coverage).

Python runs much of a program's code implicitly: ``a + b`` calls a Python
``__add__``, ``sorted`` calls its ``key=``, a property runs its getter,
``class`` statements call ``__init_subclass__`` and ``__set_name__``.  The
interpreter makes those calls itself, from C, so no rewritten call site sees
them.  A *routed* function is one whose calls from C the Cython core
intercepts (``cassette._core``: the trampoline): made on behalf of rewritten
code, such a call is an operation of that code's runtime and runs
overdubbed; made anywhere else, it runs as it always does.  Routing changes
nothing the program can observe.

This module decides what to route:

* for a class (:func:`route_class`), its special methods (which the
  interpreter calls through protocols), the methods C code calls by name
  (:data:`METHODS_CALLED_BY_NAME`: ``bisect.insort`` calls ``insert``,
  ``print`` calls ``write``, ``dict(mapping)`` calls ``keys``), the
  accessors of its properties, and the special methods of the classes of
  its other descriptors (``functools.cached_property`` …);
* for a call of a primitive (:func:`route_argument`), each Python callable
  handed to it — ``sorted(xs, key=f)``, ``map(obj.method, xs)`` — and the
  class of each argument, whose methods the primitive may call
  (``heapq.heappush(h, item)`` compares items with ``__lt__``);
* for the whole process (:func:`route_new_classes`), every class alive,
  each module's ``__getattr__``/``__dir__`` and the module functions the
  interpreter calls by name (the import system's ``_find_and_load`` …),
  again whenever modules have been imported since; a module whose body
  runs overdubbed is routed as soon as it has run (:func:`route_module`);
* for a package with compiled modules (numpy, scipy, pandas …), every
  function and method: its Cython or C code calls them by name;
* for a compiled module, the Python functions it fetched once and keeps in
  its state (:func:`_route_extension_state`: ``_asyncio``'s
  ``traceback.extract_stack``, ``_elementtree``'s ``copy.deepcopy``,
  ``_pickle``'s reducers of ``copyreg.dispatch_table``), found through the
  garbage collector's traversal of the module, which runs no code;
* for a compiled module loading on behalf of overdubbed code
  (:func:`begin_extension_load`), whatever a module attribute read returns
  while it loads: its initialisation fetches the functions it will call;
* for a ``class`` statement (:func:`route_bases`), the ``__mro_entries__``
  of its bases that are not classes (``typing.NamedTuple``'s);
* for ``pickle.loads`` called on behalf of overdubbed code
  (:func:`route_global`), each global the unpickler fetches by name to call
  (the reconstructor a ``__reduce__`` returned): the interpreter announces
  it with the audit event ``pickle.find_class``;
* wherever cassette meets a C object wrapping Python functions (a primitive
  callee, a class attribute, a module global), the functions it calls
  (:func:`callables.wrapped_functions`: ``lru_cache``, numpy's
  dispatchers, pandas' ``cache_readonly``, ``cmp_to_key``).

Routing a plain function leaves its positional Python-to-Python calls as
fast as before, but (3.12+) a call of it with keyword arguments from code
that is not overdubbed is no longer inlined, and so uses C stack; a function
the interpreter calls through a protocol (a special method, a property
accessor) loses the interpreter's inlining of it altogether.  Hence the
restraint above: a class's plain methods are routed only when C code is
known to call them by name, and module functions only when C code is known
to hold or fetch them.  (Measured on 3.12, routing every module-level
function of the process instead: a function recursing through keyword calls
then fails at depth 748 where it reached the recursion limit, 998, before —
whatever the limit —, and calls of routed functions with keywords or from C
cost 30-90% more outside overdubbed code.)

When the core is the runtime, :mod:`cassette.entry` has it call
:func:`install` with its routing primitives; under the
pure-Python runtime nothing is installed and routing is a no-op (what the
interpreter calls from C then escapes, and :mod:`cassette.escapes` counts
it).
"""

import functools
import importlib.machinery
import sys
import types
import weakref

from . import callables
from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_modules = sys.modules
_weakref = weakref.ref

#: How deep a chain of method-wrappers (``f.__call__.__call__`` …) is
#: looked through for what it finally calls, here and in the core.  Deeper
#: chains (test_descr makes one a million deep) are routed only as far as
#: this: looking through all of one per operation would make a loop that
#: deepens it quadratic.
WRAPPER_DEPTH = 16

_HEAPTYPE = callables.HEAPTYPE_FLAG
_TYPE_SUBCLASS = callables.TYPE_SUBCLASS_FLAG
_DESCRIPTOR_METHODS = callables.DESCRIPTOR_METHODS
_FunctionType = types.FunctionType
_MethodType = types.MethodType
_BuiltinFunctionType = types.BuiltinFunctionType
_ModuleType = types.ModuleType
_partial = functools.partial
_MethodWrapperType = types.MethodWrapperType

_route = None               # the core's routing primitive, once installed
_install_holders = None
_holders_found = ()
_watch_module_fetches = None
_modules_seen = -1          # len(sys.modules) at the last process scan
_class_seen = _note_class_seen = _type_defines = None
#: Module functions the interpreter calls itself: in every module, and in
#: particular ones (the import system's, the warnings machinery's, pickling's,
#: typing's and asyncio's, which C code calls by name; the standard codec
#: search function, registered at start-up).
_MODULE_HOOKS = ("__getattr__", "__dir__", "__annotate__")
#: In :data:`_CALLED_BY_NAME`: every function the module defines.
ALL_FUNCTIONS = None
_CALLED_BY_NAME = {
    "importlib._bootstrap": ("_find_and_load", "_handle_fromlist", "_lock_unlock_module",
                             "_module_repr"),
    "warnings": ("_showwarnmsg", "_warn_unawaited_coroutine"),
    "encodings": ("search_function",),
    "copyreg": ("_reconstructor", "_reduce_ex", "__newobj__", "__newobj_ex__", "_slotnames"),
    # 3.14+: Union[...] (types.UnionType, in C) checks each string argument
    # with typing._type_check.
    "typing": ("_generic_class_getitem", "_generic_init_subclass", "_typevar_subst",
               "_type_check"),
    "asyncio.base_tasks": ("_task_repr", "_task_get_stack", "_task_print_stack"),
    "asyncio.base_futures": ("_future_repr",),
    # 3.11's _asyncio keeps these in static storage (3.12+: module state).
    "asyncio.coroutines": ("iscoroutine",),
    "inspect": ("isgenerator",),
    "traceback": ("extract_stack",),
    # re.sub with a template string and match.expand: _sre calls re._subx
    # and re._expand (3.11) or re._compile_template (3.12+) by name.
    "re": ("_subx", "_expand", "_compile_template"),
    # int <-> str conversions of huge numbers (int(s), str(n)).
    "_pylong": ALL_FUNCTIONS,
    # C extension modules build their named tuples at import (_decimal).
    "collections": ("namedtuple",),
    # datetime.strptime and time.strptime import _strptime at each call and
    # call it (3.11-3.13: _strptime_datetime, _strptime_time; 3.14+:
    # _strptime_datetime_datetime, _date, _time as well).
    "_strptime": ALL_FUNCTIONS,
    # Compiled code that keeps what it fetched out of the garbage
    # collector's sight (pydantic-core's field defaults: a static cell of
    # Rust holds copy.deepcopy).
    "copy": ("deepcopy", "copy"),
    # os.fork calls the hooks os.register_at_fork registered, from C; the
    # interpreter keeps them in its own state, out of any traversal's sight.
    # (Registered by overdubbed code, they were routed as arguments.)
    "logging": ("_acquireLock", "_releaseLock", "_prepareFork", "_afterFork",
                "_after_at_fork_child_reinit_locks"),
    "threading": ("_after_fork",),
    "asyncio.events": ("get_event_loop_policy", "on_fork"),
    # numpy's C code calls these modules' functions by name: ndarray methods
    # (sum, any, max, mean ... in _methods), repr and str of arrays and
    # dtypes, error-state callbacks, linalg's error raisers.  (numpy has
    # compiled modules, so the rule of _in_compiled_package routes them too;
    # the entries say which calls are known.)
    "numpy._core._methods": ALL_FUNCTIONS,
    "numpy._core._internal": ALL_FUNCTIONS,
    "numpy._core._dtype": ALL_FUNCTIONS,
    "numpy._core.arrayprint": ALL_FUNCTIONS,
    "numpy._core._exceptions": ALL_FUNCTIONS,
    "numpy._core._ufunc_config": ALL_FUNCTIONS,
    "numpy.linalg._linalg": ALL_FUNCTIONS,
}
#: The hooks of ``sys`` the interpreter calls, when the program set them.
_SYS_HOOKS = ("excepthook", "displayhook", "unraisablehook", "breakpointhook")

#: Methods the interpreter and the standard library's C code call by name
#: (besides special methods): file-like objects (print, io), codecs,
#: ``bisect.insort`` (``insert``), ``dict(mapping)`` (``keys``), mapping
#: patterns of ``match`` (``get``), asyncio's C tasks (``call_soon``,
#: ``get_debug``, their weak set's ``add``/``discard``),
#: ``yield from``/``await`` on iterators (``send``, ``throw``, ``close``),
#: class creation (``mro``) and pickling.  A plain method is routed only if
#: its name is here: routing a function costs the interpreter's inlining of
#: calls of it with keyword arguments (3.12+), which deep recursion in code
#: that is not overdubbed would feel.
METHODS_CALLED_BY_NAME = frozenset({
    "write", "writelines", "flush", "read", "read1", "readline", "readlines", "readinto",
    "readinto1", "fileno", "isatty", "seek", "tell", "truncate", "close", "readable",
    "writable", "seekable", "encode", "decode", "getstate", "setstate", "reset",
    "insert", "keys", "get", "add", "discard", "send", "throw", "mro", "persistent_id",
    "persistent_load", "find_class", "reducer_override", "call_soon", "get_debug",
    "register",     # C extension modules register their types with ABCs (_decimal)
    "readall",      # io's buffered readers call their raw stream's
    "utcoffset", "dst", "tzname", "fromutc",    # datetime calls its tzinfo's
})


def install(route, class_seen, note_class_seen, type_defines, watch_module_fetches,
            install_holders):
    """Install the core's primitives: ``route(function, protocol)`` routes
    one Python function; ``class_seen(cls)`` and ``note_class_seen(cls)``
    remember which versions of classes were routed already;
    ``type_defines(cls, names)`` tells whether the MRO of ``cls`` defines
    one of ``names`` (the interpreter's cached lookup);
    ``watch_module_fetches(begin)`` begins or ends a span in which what
    module attribute reads return is routed; ``install_holders(types)``
    names the classes of :data:`HOLDERS` found so far."""
    global _route, _class_seen, _note_class_seen, _type_defines, _watch_module_fetches
    global _install_holders
    _route, _class_seen, _note_class_seen = route, class_seen, note_class_seen
    _type_defines = type_defines
    _watch_module_fetches = watch_module_fetches
    _install_holders = install_holders
    _note_holders()


#: The names under which routing met a property with a Python getter (never
#: replaced, only added to).
PROPERTY_NAMES = set()
_property_listeners = []


def on_property_name(listener):
    """Call ``listener(name)`` whenever a name joins :data:`PROPERTY_NAMES`,
    before the getter found under it is routed (the core pins the loads of
    that name, see :attr:`cassette.versions.common.Layer.
    attribute_load_pin`)."""
    _property_listeners.append(listener)


def _note_property_name(name):
    if name not in PROPERTY_NAMES:
        PROPERTY_NAMES.add(name)
        for listener in _property_listeners:
            listener(name)


def is_installed():
    """True when the core routes (never under the pure-Python runtime)."""
    return _route is not None


def _route_function(function, protocol=False):
    """Route ``function``, and the ``__annotate__`` function it holds (PEP
    649, 3.14+): reading ``function.__annotations__`` calls that from C,
    through ``getattr``, ``inspect`` or ``annotationlib`` alike."""
    if type(function) is _FunctionType and not callables.is_library_code(function.__code__):
        _route(function, protocol)
        _route_function(getattr(function, "__annotate__", None))


def _route_own_entries(klass):
    """Route what ``klass``'s own ``__dict__`` holds (see the module doc),
    unless the core has seen this version of the class already (a class's
    version changes whenever the class does; the core keeps no reference to
    it, so routing creates no object a program could count)."""
    if _class_seen(klass):
        return
    _note_class_seen(klass)
    namespace = callables.class_dict(klass)
    compiled = _in_compiled_package(namespace.get("__module__"))
    for name, value in list(namespace.items()):
        kind = type(value)
        if kind is _FunctionType or kind is staticmethod or kind is classmethod:
            if type(name) is str and name[:2] == "__" and name[-2:] == "__" and len(name) > 4:
                protocol = True
            elif name in METHODS_CALLED_BY_NAME or compiled:
                protocol = False
            else:
                continue
            _route_function(value if kind is _FunctionType else value.__func__, protocol)
        elif kind is property:
            if type(value.fget) is _FunctionType and type(name) is str:
                _note_property_name(name)
            _route_function(value.fget, True)
            _route_function(value.fset, True)
            _route_function(value.fdel, True)
        elif _type_defines(kind, _DESCRIPTOR_METHODS):
            if callables.type_flags(kind) & _HEAPTYPE:
                # A descriptor of a Python class: the interpreter calls its
                # __get__/__set__/__delete__.
                route_class(kind)
            # A C descriptor calling a Python function (pandas'
            # cache_readonly calls its fget).
            for wrapped in callables.wrapped_functions(value):
                _route_function(wrapped, True)


def route_class(cls):
    """Route the functions the interpreter may call implicitly for ``cls``,
    its instances and its subclasses' ``class`` statements (its MRO's and
    its metaclass's)."""
    if _route is None:
        return
    for klass in callables.computed_mro(cls) or (cls,):
        # (Seen first: the commonest answer, and the core's cheapest.)
        if (not _class_seen(klass) and callables.type_flags(klass) & _HEAPTYPE
                and not _is_library_class(klass)):
            _route_own_entries(klass)
    metaclass = type(cls)
    if metaclass is not type:
        route_class(metaclass)


def _is_library_class(klass):
    module = callables.class_dict(klass).get("__module__")
    return type(module) is str and (module == "cassette" or module[:9] == "cassette.")


def route_argument(value):
    """Route what a primitive may call back in ``value``, one of its
    arguments: ``value`` itself if it is a Python function, the function of
    a bound method, a ``functools.partial`` or a method-wrapper
    (``f.__call__``), and the class of ``value``."""
    if _route is None:
        return
    kind = type(value)
    if kind is _FunctionType:
        _route_function(value)
    elif kind is _MethodType:
        _route_function(value.__func__)
        route_argument(value.__self__)
    elif kind is staticmethod or kind is classmethod:
        _route_function(value.__func__)
    elif callables.type_flags(kind) & _TYPE_SUBCLASS:
        if callables.type_flags(value) & _HEAPTYPE:
            route_class(value)
    elif callables.type_flags(kind) & _HEAPTYPE:
        route_class(kind)
    elif kind is _partial:
        route_argument(value.func)
    elif kind is _MethodWrapperType:
        # f.__call__ calls f: route what a chain of them ends at.
        for _ in range(WRAPPER_DEPTH):
            value = value.__self__
            if type(value) is not _MethodWrapperType:
                route_argument(value)
                break


def route_annotate(owner):
    """Route the ``__annotate__`` function of ``owner`` (a function, a
    module or a class), which reading ``owner.__annotations__`` calls from
    C when annotations are deferred (PEP 649: 3.14+; elsewhere nothing
    holds one)."""
    if _route is None:
        return
    kind = type(owner)
    if kind is _FunctionType:
        _route_function(getattr(owner, "__annotate__", None))
    elif kind is _ModuleType:
        namespace = getattr(owner, "__dict__", None)
        if type(namespace) is dict:
            _route_function(namespace.get("__annotate__"))
    elif callables.type_flags(kind) & _TYPE_SUBCLASS:
        if callables.type_flags(owner) & _HEAPTYPE:
            route_class(owner)      # a class's __annotate__ is a special method


def route_callee(callee):
    """Route what a primitive callee wraps and calls: the Python functions
    under a C wrapper (``functools.lru_cache``'s, a numpy dispatcher's
    implementation and relevant-arguments function: see
    :func:`callables.wrapped_functions`), and whatever
    :func:`route_argument` routes for it."""
    if _route is None:
        return
    route_argument(callee)
    for wrapped in callables.wrapped_functions(callee):
        route_argument(wrapped)


def route_module(namespace):
    """Route what the interpreter may call by itself in the module whose
    globals are ``namespace``: its ``__getattr__``/``__dir__`` and the
    functions of :data:`_CALLED_BY_NAME`.  Done for every module by the
    process scan, and for a module whose body just ran overdubbed (an
    import made while overdubbed: ``int(s)`` of a huge number imports
    ``_pylong`` from C)."""
    if _route is None:
        return
    for name in _MODULE_HOOKS:
        _route_function(namespace.get(name), True)
    module_name = namespace.get("__name__")
    if type(module_name) is not str:
        return
    if module_name in _pending_globals:
        for qualname in _pending_globals.pop(module_name):
            _route_found(_static_global(namespace, qualname))
    names = _CALLED_BY_NAME.get(module_name, ())
    if names is ALL_FUNCTIONS or _in_compiled_package(module_name):
        for value in list(namespace.values()):
            if type(value) is _FunctionType:
                _route_function(value)
            else:
                for wrapped in callables.wrapped_functions(value):
                    _route_function(wrapped)
        return
    for name in names:
        _route_function(namespace.get(name))
    for value in list(namespace.values()):
        if type(value) is not _FunctionType:
            for wrapped in callables.wrapped_functions(value):
                _route_function(wrapped)


def _route_module_functions(module):
    """Route every function of ``module``'s namespace (a module compiled code
    holds and calls by name)."""
    namespace = getattr(module, "__dict__", None)
    if type(namespace) is dict:
        for value in list(namespace.values()):
            if type(value) is _FunctionType:
                _route_function(value)


#: How deep :func:`_route_extension_state` looks into the containers a
#: compiled module's state holds (``_pickle``'s ``copyreg.dispatch_table``
#: is one level down).
_STATE_DEPTH = 2
_CONTAINERS = (tuple, list, dict, set, frozenset)


def _route_extension_state(module):
    """Route the Python functions a compiled module fetched once and keeps
    to call from C: what the garbage collector's traversal of ``module``
    shows besides its namespace (the state of a module of multi-phase
    initialisation, PEP 489/573; a pure-Python module shows only its
    namespace), looked into through containers, C wrappers
    (:func:`callables.wrapped_functions`) and modules (whose functions the
    compiled module calls by name: ``_elementtree`` calls
    ``xml.etree.ElementPath.find``).  Traversal runs no code.  A module
    keeping what it fetched elsewhere (static C storage, or none: a fetch
    at each call) is invisible here; :data:`_CALLED_BY_NAME` names those
    known."""
    namespace = getattr(module, "__dict__", None)
    for held in callables.live_referents(module):
        if held is not namespace:
            _route_held(held, _STATE_DEPTH)


def _route_held(value, depth):
    kind = type(value)
    if kind is _FunctionType:
        _route_function(value)
    elif kind is _ModuleType:
        _route_module_functions(value)
    elif kind in _CONTAINERS:
        if depth:
            for item in callables.live_referents(value):
                _route_held(item, depth - 1)
    elif not callables.type_flags(kind) & _TYPE_SUBCLASS:
        for wrapped in callables.wrapped_functions(value):
            _route_function(wrapped)


#: C classes whose methods call Python callables an instance holds as
#: attributes, which the program set by assignment, not handed over as
#: arguments: a pickler's ``dispatch_table`` (``multiprocessing``'s
#: reducers), ``reducer_override`` and ``persistent_id``, an unpickler's
#: ``persistent_load``, an SQLite connection's or cursor's
#: ``row_factory``.  Module -> class names; the core knows those of
#: modules loaded (:func:`_note_holders`).
HOLDERS = {"_pickle": ("Pickler", "Unpickler"), "_sqlite3": ("Connection", "Cursor")}


def _note_holders():
    """Tell the core the :data:`HOLDERS` classes whose modules are loaded,
    when they changed."""
    global _holders_found
    found = []
    for module_name, names in HOLDERS.items():
        namespace = getattr(_modules.get(module_name), "__dict__", None)
        if type(namespace) is dict:
            found += [klass for klass in map(namespace.get, names) if type(klass) is type]
    if tuple(found) != _holders_found:
        _holders_found = tuple(found)
        _install_holders(_holders_found)


def route_holder(holder):
    """Route the Python functions ``holder``, an instance of a
    :data:`HOLDERS` class handed to a primitive, holds: what the garbage
    collector's traversal of it shows, and one level into the containers
    it holds (a ``dispatch_table``).  Traversal runs no code."""
    for held in callables.live_referents(holder):
        if type(held) is not _ModuleType:
            _route_held(held, 1)


def route_bases(bases):
    """Route what a ``class`` statement calls of ``bases`` that are not
    classes: their ``__mro_entries__`` (PEP 560), a special method of their
    class or an attribute of their own (``typing.NamedTuple``, a function,
    holds ``_namedtuple_mro_entries``), read without running program
    code."""
    if _route is None:
        return
    for base in bases:
        kind = type(base)
        if callables.type_flags(kind) & _TYPE_SUBCLASS:
            continue
        if callables.type_flags(kind) & _HEAPTYPE:
            route_class(kind)
        entries = callables.static_attribute(base, "__mro_entries__")
        if entries is not None:
            route_argument(entries)


#: Module name -> qualified names the unpickler announced before the module
#: was imported: routed once its body has run (:func:`route_module`).
_pending_globals = {}
_PENDING_LIMIT = 1024


def route_global(module_name, qualname):
    """Route the global named ``qualname`` in module ``module_name``, which
    an unpickler is about to fetch and call from C (the audit event
    ``pickle.find_class``, raised on behalf of overdubbed code): a
    module function, a function named by its qualified name (a static
    method, ``Class.function``: protocol 4+), a class with its methods (a
    method pickles as ``getattr(cls_or_instance, name)``).  Found without
    running program code; a module not imported yet is routed when its
    body has run."""
    if _route is None or type(module_name) is not str or type(qualname) is not str:
        return
    modules = sys.modules
    module = dict.get(modules, module_name) if issubclass(type(modules), dict) else None
    if module is None:
        if len(_pending_globals) < _PENDING_LIMIT:
            _pending_globals.setdefault(module_name, set()).add(qualname)
        return
    if type(module) is _ModuleType:
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is dict:
            _route_found(_static_global(namespace, qualname))


def _static_global(namespace, qualname):
    """What ``qualname`` (dotted) names from module namespace ``namespace``,
    looked up in namespaces and class dictionaries only, or None."""
    parts = qualname.split(".")
    found = namespace.get(parts[0])
    for part in parts[1:]:
        if found is None:
            return None
        if callables.type_flags(type(found)) & _TYPE_SUBCLASS:
            found = callables.lookup_on_type(found, part)
        elif type(found) is _ModuleType:
            inner = getattr(found, "__dict__", None)
            found = inner.get(part) if type(inner) is dict else None
        else:
            return None
    return found


def _route_found(value):
    """Route a global an unpickler fetched: a function, a C wrapper's
    functions, or a class and every method of it — a pickle may rebuild a
    bound method as ``getattr(cls_or_instance, name)`` and call it (how
    methods pickle)."""
    if value is None:
        return
    route_argument(value)
    kind = type(value)
    if callables.type_flags(kind) & _TYPE_SUBCLASS:
        if callables.type_flags(value) & _HEAPTYPE:
            for klass in callables.class_mro(value):
                if callables.type_flags(klass) & _HEAPTYPE and not _is_library_class(klass):
                    _route_methods(klass)
    elif kind is not _FunctionType:
        for wrapped in callables.wrapped_functions(value):
            route_argument(wrapped)


#: id(class) -> (weak reference to it, how many entries its namespace had)
#: for the classes :func:`_route_methods` routed: a class unpickled again
#: and again is looked at again only when its namespace grew or shrank.
_methods_routed = {}


def _route_methods(klass):
    """Route every function, class method and static method ``klass``'s own
    namespace holds."""
    namespace = callables.class_dict(klass)
    seen = _methods_routed.get(id(klass))
    if seen is not None and seen[0]() is klass and seen[1] == len(namespace):
        return
    for member in list(namespace.values()):
        if type(member) is staticmethod or type(member) is classmethod:
            _route_function(member.__func__)
        elif type(member) is _FunctionType:
            _route_function(member)
    if len(_methods_routed) >= 4096:
        _methods_routed.clear()
    _methods_routed[id(klass)] = (weakref.ref(klass), len(namespace))


#: Top-level packages with a compiled extension module among their modules.
_compiled_packages = set()
_EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _note_compiled_modules():
    """Note the packages whose compiled modules are loaded (by file name:
    no program code runs)."""
    for name, module in list(_modules.items()):
        if type(module) is _ModuleType and type(name) is str:
            path = module.__dict__.get("__file__")
            if type(path) is str and path.endswith(_EXTENSION_SUFFIXES):
                _compiled_packages.add(name.partition(".")[0])


def begin_extension_load(spec_or_module):
    """A compiled module is about to be created (``_imp.create_dynamic(spec)``)
    or executed (``_imp.exec_dynamic(module)``) on behalf of overdubbed
    code.  Its package is noted as compiled now, and the functions of its
    modules already imported are routed (:func:`_in_compiled_package`);
    until :func:`end_extension_load`, what module attribute reads return
    is routed: the module's initialisation fetches Python functions to
    call from C, then or later (Cython's ``from abc import abstractmethod``,
    numpy's ``numpy.dtypes._add_dtype_helper``, ``threading.RLock``)."""
    if _route is None:
        return
    if type(spec_or_module) is _ModuleType:
        namespace = getattr(spec_or_module, "__dict__", None)
        name = namespace.get("__name__") if type(namespace) is dict else None
    else:
        name = callables.static_attribute(spec_or_module, "name")
    if type(name) is str:
        package = name.partition(".")[0]
        if package not in _compiled_packages:
            _compiled_packages.add(package)
            for loaded_name, module in list(_modules.items()):
                if (type(loaded_name) is str and type(module) is _ModuleType
                        and loaded_name.partition(".")[0] == package):
                    namespace = getattr(module, "__dict__", None)
                    if type(namespace) is dict:
                        route_module(namespace)
    _watch_module_fetches(True)


def begin_fetching_call():
    """A C function that fetches what it calls from modules at each call
    is about to be called on behalf of overdubbed code (``breakpoint``,
    whose default hook imports ``$PYTHONBREAKPOINT``, ``pdb.set_trace``,
    and calls it): the hooks of ``sys`` it may call are routed, and until
    :func:`end_fetching_call` what module attribute reads return is."""
    if _route is None:
        return
    _route_sys_hooks()
    _watch_module_fetches(True)


def _route_sys_hooks():
    """Route the hooks of ``sys`` the program set (the default ones are C)."""
    for name in _SYS_HOOKS:
        hook = getattr(sys, name, None)
        if type(hook) is not _BuiltinFunctionType:
            route_argument(hook)


def end_fetching_call():
    """The call :func:`begin_fetching_call` announced has returned."""
    if _route is not None:
        _watch_module_fetches(False)


def end_extension_load(module):
    """The load :func:`begin_extension_load` announced has ended; ``module``
    is the compiled module (None if it failed): the functions it keeps in
    its state or namespace are routed."""
    if _route is None:
        return
    _watch_module_fetches(False)
    if type(module) is _ModuleType:
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is dict:
            route_module(namespace)
        _route_extension_state(module)
        if getattr(module, "__name__", None) in HOLDERS:
            _note_holders()


def _in_compiled_package(module_name):
    """True for a module of a package that has compiled (Cython, C) modules:
    their code calls the package's Python functions and methods by name
    (pandas' Cython calls ``NDFrame._set_axis``, ``np.full``), so all of
    them are routed.  Other packages' plain methods are routed only under
    the names of :data:`METHODS_CALLED_BY_NAME`: routing costs calls from
    code that is not overdubbed their inlining (see the module doc)."""
    return type(module_name) is str and module_name.partition(".")[0] in _compiled_packages


#: id(module) -> (a weak reference to it, id of its namespace, the
#: namespace's size) at the process scan that routed it: a later scan skips
#: the module while all three hold (an import elsewhere does not make every
#: module's namespace worth reading again: 30 ms with numpy loaded, at each
#: overdub after each import).  Bounded by the modules alive.
_scanned_modules = {}


def _scanned_as_it_is(module, namespace):
    """Whether the process scan routed ``module`` with ``namespace`` as it
    is now (and note it as routed if not)."""
    key = id(module)
    size = len(namespace) if type(namespace) is dict else -1
    known = _scanned_modules.get(key)
    if known is not None and known[0]() is module and known[1] == id(namespace) \
            and known[2] == size:
        return True
    try:
        reference = _weakref(module, lambda _, key=key: _scanned_modules.pop(key, None))
    except TypeError:
        return False
    _scanned_modules[key] = (reference, id(namespace), size)
    return False


def route_new_classes():
    """Route the hooks of ``sys`` the program set, and every class alive,
    each module's ``__getattr__`` and ``__dir__`` and the module functions
    the interpreter calls — once, then again whenever modules have been
    imported since (a cheap check, made at each entry of ``overdub``)."""
    global _modules_seen
    if _route is None:
        return
    _route_sys_hooks()              # set at any time, so looked at each time
    if len(_modules) == _modules_seen:
        return
    _modules_seen = len(_modules)
    _note_compiled_modules()
    _note_holders()
    for module in list(_modules.values()):
        if type(module) is _ModuleType:
            namespace = getattr(module, "__dict__", None)
            if _scanned_as_it_is(module, namespace):
                continue            # routed at an earlier scan, and no name added since
            if namespace is not None:
                route_module(namespace)
            _route_extension_state(module)
    pending = [object]
    visited = set()
    while pending:
        klass = pending.pop()
        if id(klass) in visited:
            continue
        visited.add(id(klass))
        if callables.type_flags(klass) & _HEAPTYPE and not _is_library_class(klass):
            _route_own_entries(klass)
        try:
            pending.extend(type.__subclasses__(klass))
        except TypeError:
            pass

