"""Tagging (reference §6): metadata that rides on values, w.r.t. one context.

Contract
--------
* ``enabletagging(ctx, f)`` returns a new context like ``ctx`` (see
  :func:`cassette.similarcontext`) with a fresh :class:`Tag` and an empty
  :class:`BindingsCache`.  Every call makes a distinct tag: values tagged
  w.r.t. one context are ordinary (opaque) values to every other context.
  ``f`` is the function the context is meant to run; it must be callable.
* ``hastagging(ctx)``: whether ``ctx`` came from :func:`enabletagging`.  The
  functions below that tag or read tags need it, else :class:`TaggingError`;
  the predicates (``istagged`` …) simply answer False for a context without
  tagging.  A non-context argument is a ``TypeError``.
* ``tag(value, ctx, metadata=NoMetaData)`` wraps ``value`` in a
  :class:`Tagged` of ``ctx``'s tag, carrying ``metadata``.
  ``NoMetaData`` is always allowed.  Other metadata must be an instance of
  ``type(ctx).metadatatype(T)``, ``T`` the value's *primal type* (its type
  with every tag, of any context, taken off); otherwise it is converted by
  calling that type (``tag(1, ctx, 2)`` stores ``2.0`` for ``float``).
  ``metadatatype`` returning ``None`` (the default) allows no metadata.
  Metadata that is not allowed, or whose conversion fails (whatever it
  raised, chained), is a ``TypeError`` naming the context, the value's type
  and the metadata.  Values and metadata tagged by *other* contexts keep
  those tags: conversion applies to the primal inside them and re-wraps it.
  Tagging a value already tagged w.r.t. ``ctx`` is a :class:`TaggingError`.
* ``untag(x, ctx)`` is the value ``x`` wraps if ``x`` is tagged w.r.t.
  ``ctx``, else ``x`` itself.  ``istagged(x, ctx)`` says which.
  ``metadata(x, ctx)`` is the metadata ``tag`` stored (``NoMetaData`` for an
  untagged value), ``hasmetadata`` whether it is not ``NoMetaData``;
  ``metameta``/``hasmetameta`` the same for per-component metadata
  (``NoMetaMeta`` when there is none).
* The type of a tagged value is a subclass of ``Tagged[T]`` for its wrapped
  value's type ``T``, made for the tag: ``untagtype(type(tag(x, ctx)), ctx)
  is type(x)``, and for any type the tag did not make, ``untagtype(T, ctx)
  is T``.  ``istaggedtype(T, ctx)`` says which.  Both also accept a context
  class, meaning any tag of a context of that class.  ``Tagged[T]`` (cached:
  ``Tagged[T] is Tagged[T]``) is for dispatch: every tagged value of any tag
  wrapping a ``T`` is an instance of it.
* A tagged value reaching code outside its context behaves like its primal
  value: attribute access, calls, operators, conversions, ``len``,
  iteration, hashing, ``str``/``repr``/``format``, ``isinstance`` (through
  ``__class__``), ``copy`` and ``pickle`` act on the wrapped value (the
  result is not tagged).  Only ``type(x)`` and identity tell it apart.
* :func:`untag_arguments` is what the default ``fallback`` calls: primitives
  see the primal values of arguments tagged w.r.t. the running context.
"""

from __future__ import annotations

import copy as _copy
import itertools
import operator
import weakref
from typing import Any, Callable, TypeVar

from ._singletons import (NoMetaData, NoMetaMeta, TAGGED_DATA_SLOT, TAGGED_TAG_SLOT,
                          TAGGED_VALUE_SLOT)
from .context import Context, _similar
from .errors import TaggingError
from . import callables as _callables, dispatch as _dispatch, lifetimes as _lifetimes
from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_shallow_copy = _copy.copy
_deepcopy = _copy.deepcopy
_ref = weakref.ref

__all__ = [
    "BindingsCache", "Meta", "Tag", "Tagged", "enabletagging", "hasmetadata", "hasmetameta",
    "hastagging", "istagged", "istaggedtype", "metadata", "metameta", "tag", "untag",
    "untag_arguments", "untagtype",
]


_C = TypeVar("_C", bound=Context)


class Meta:
    """The metadata of one component (element, item or attribute) of a
    container or object, as :func:`metameta` reports it: ``data`` (the
    metadata the component carries, or ``NoMetaData``) and ``meta``
    (metadata of its own components, or ``NoMetaMeta``)."""

    __slots__ = ("data", "meta")
    data: Any
    meta: Any

    def __init__(self, data: Any = NoMetaData, meta: Any = NoMetaMeta) -> None:
        self.data = data
        self.meta = meta

    def __repr__(self):
        return f"Meta({self.data!r}, {self.meta!r})"


_tag_numbers = itertools.count(1)


class Tag:
    """The identity of one :func:`enabletagging` call.  It makes (and
    caches) the types of the values tagged with it.

    A tagged type holds its primal type, so what a tag keeps of the types
    it made follows ``cassette.lifetimes``: for a builtin type, held for
    good (``_types``); for a class its module reaches, held while it does
    (``_types`` too, asked about again at collections); for any other
    class, held weakly (``_weak_types``: the tagged type lives while a value
    of it does, and the class dies as it would plainly)."""

    __slots__ = ("context_type", "number", "_types", "_weak_types", "_held_young",
                 "_held_old", "_noted", "__weakref__")

    def __init__(self, context_type):
        self.context_type = context_type
        self.number = next(_tag_numbers)
        self._types = {}            # primal type -> tagged type (read by the core)
        self._weak_types = {}       # id(primal type) -> weak reference to the tagged type
        self._held_young = []       # classes held since the last collection
        self._held_old = []
        self._noted = False

    def tagged_type(self, primal_type):
        """The type of values of ``primal_type`` tagged with this tag."""
        made = self._types.get(primal_type)
        if made is not None:
            return made
        held = self._weak_types.get(id(primal_type))
        made = held() if held is not None else None
        if made is not None:
            return made
        spares = _spare_types.get(primal_type)
        if spares:
            made = spares.pop()
            made.__name__ = made.__qualname__ = f"{made.__bases__[0].__name__}@{self.number}"
        else:
            generic = Tagged[primal_type]
            made = type(generic)(f"{generic.__name__}@{self.number}", (generic,),
                                 {"__slots__": (), "__module__": __name__})
        _made_by[id(made)] = (_ref(made, _forgetting(_made_by, id(made))), _ref(self))
        if not primal_type.__flags__ & _HEAPTYPE:
            self._types[primal_type] = made
        elif _callables.lives_with_its_module(primal_type):
            self._types[primal_type] = made
            self._held_young.append(primal_type)
            if not self._noted:
                self._noted = True
                _lifetimes.note_holder(self)
        else:
            key = id(primal_type)
            self._weak_types[key] = _ref(made, _forgetting(self._weak_types, key))
        return made

    def forget_dynamic(self, everything):
        """``cassette.lifetimes``: at the start of a collection, let go of
        the classes held since the last one (``everything``: of all) that
        their modules no longer reach; whether any is still held."""
        asked, self._held_young = self._held_young, []
        if everything:
            asked.extend(self._held_old)
            self._held_old = []
        for primal_type in asked:
            if _callables.lives_with_its_module(primal_type):
                self._held_old.append(primal_type)
            else:
                self._types.pop(primal_type, None)
        self._noted = bool(self._held_old)
        return self._noted

    def __del__(self):
        # The tag's types go spare (no value of them is left: each holds
        # its tag).  A method, not a weak reference's callback: nothing to
        # make per tag.
        try:
            _tag_died(self)
            if self._types:
                _keep_spares(self._types)
        except Exception:               # interpreter shutdown: nothing to reuse
            pass

    def __repr__(self):
        return f"<cassette tag {self.number} of {self.context_type.__qualname__}>"

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        raise TypeError(f"{self!r} cannot be pickled: a tag is the identity of one "
                        "enabletagging call, which no other process shares")


#: id(tagged type) -> (a weak reference to it, a weak reference to the tag
#: that made it), for every tagged type alive: by address, so as to keep
#: no tagged type (and its primal type) alive.
_made_by = {}


def _forgetting(table, key):
    """The callback of a weak reference that ``table[key]`` holds (or
    whose entry ``table[key]`` begins with): the entry goes with it."""
    def forget(reference):
        entry = table.get(key)
        if entry is reference or (type(entry) is tuple and entry[0] is reference):
            del table[key]
    return forget


#: Builtin primal type -> tagged types whose tag died, for the next tags to
#: reuse: making a class costs more than a short run of a tagged program.
#: No value of a dead tag's types is left (each holds its tag).  Classes of
#: the program are not kept (the spares would keep them alive).
_spare_types = {}
_SPARES_KEPT = 4
_HEAPTYPE = 1 << 9              # Py_TPFLAGS_HEAPTYPE


def _tag_died(tag_):
    """What else must forget a tag when it dies (the Cython core's caches
    that borrow it)."""


def _keep_spares(types_of_tag):
    for primal_type, made in types_of_tag.items():
        if not primal_type.__flags__ & _HEAPTYPE:
            spares = _spare_types.setdefault(primal_type, [])
            if len(spares) < _SPARES_KEPT:
                spares.append(made)


class BindingsCache:
    """The metadata one tagging context keeps for the components of
    containers, objects and module namespaces its runs stored tagged values
    into (see :mod:`cassette.propagation`); the program's data itself keeps
    the primal values.  ``entries``: ``id(target)`` -> record;
    ``additions``: how many records were added (the core remembers which
    objects have none until it changes)."""

    __slots__ = ("entries", "sweep_at", "additions")

    #: How many entries a cache holds before its first sweep (and at least
    #: before every later one: twice what the last sweep left).
    FIRST_SWEEP = 1024

    def __init__(self):
        self.entries = {}
        self.sweep_at = self.FIRST_SWEEP
        self.additions = 0

    def __len__(self):
        return len(self.entries)

    def __repr__(self):
        return f"<cassette bindings cache: {len(self.entries)} entries>"


# -- the Tagged types ------------------------------------------------------------

# id(primal type) -> a weak reference to Tagged[primal type], alive while
# anything uses it (a tagged type, a dispatch registration …).  By address:
# a key would keep the primal type alive past the collection that frees
# its tagged types.
_generic_types = {}


class TaggedMeta(type):
    """Metaclass of :class:`Tagged`: ``Tagged[T]`` names the generic type of
    tagged values wrapping a ``T``."""

    def __getitem__(cls, primal_type: type) -> TaggedMeta:
        if cls is not Tagged:
            raise TypeError(f"{cls.__name__} is already specialised")
        if not isinstance(primal_type, type):
            raise TypeError(f"Tagged[T] needs a type, got {primal_type!r}")
        known = _generic_types.get(id(primal_type))
        made = known() if known is not None else None
        if made is None:
            namespace = _method_shims(primal_type)
            namespace.update({"__slots__": (), "__module__": __name__,
                              "primal_type": primal_type})
            made = TaggedMeta(f"Tagged[{primal_type.__qualname__}]", (Tagged,), namespace)
            key = id(primal_type)
            _generic_types[key] = _ref(made, _forgetting(_generic_types, key))
        return made


def _method_shims(primal_type):
    """For each ordinary method of ``primal_type`` (found on its class, not a
    special method), a function calling it on the wrapped value.  Outside a
    run, ``tagged.m(…)`` thus acts as ``primal.m(…)``; inside one, the
    engine sees through the shim (its ``_cassette_method``): the call is an
    operation on that method with the tagged value itself first, so
    handlers see it and the fallback untags it."""
    shims = {}
    for klass in reversed(primal_type.__mro__[:-1]):     # not object's
        for name, found in vars(klass).items():
            if name.startswith("__") or name in _OWN or name == "primal_type":
                continue
            if not _callables.is_method_descriptor(found):
                shims.pop(name, None)
                continue
            shims[name] = _shim(name, found)
    return shims


def _shim(name, method):
    def shim(self, /, *args, **kwargs):
        value = object.__getattribute__(self, _VALUE)
        bound = getattr(value, name)
        return bound(*args, **kwargs) if kwargs else bound(*args)
    return _named(shim, name, method)


# The slots of a tagged value: the value it wraps, its tag, its metadata.
_VALUE, _TAG, _DATA = TAGGED_VALUE_SLOT, TAGGED_TAG_SLOT, TAGGED_DATA_SLOT
_OWN = frozenset({_VALUE, _TAG, _DATA})


def _primal(value):
    """``value`` without one level of tag, whichever context's."""
    if isinstance(type(value), TaggedMeta):
        return object.__getattribute__(value, _VALUE)
    return value


def innermost(value):
    """``value`` with every tag, of any context, taken off (the Cython
    core's ``_innermost``)."""
    while isinstance(type(value), TaggedMeta):
        value = object.__getattribute__(value, _VALUE)
    return value


class Tagged(metaclass=TaggedMeta):
    """A value tagged w.r.t. one context; see the module docstring.  Made by
    :func:`tag` (and by the tagging layer while a tagged run propagates
    metadata), never by calling the class."""

    __slots__ = (_VALUE, _TAG, _DATA)
    primal_type = object

    def __new__(cls, *args, **kwargs):
        raise TypeError("tagged values are made by cassette.tag(value, ctx, metadata)")

    # Outside its context, a tagged value acts as the value it wraps.

    @property
    def __class__(self):
        return type(object.__getattribute__(self, _VALUE))

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, _VALUE), name)

    def __setattr__(self, name, value):
        if name in _OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(object.__getattribute__(self, _VALUE), name, value)

    def __delattr__(self, name):
        delattr(object.__getattribute__(self, _VALUE), name)

    def __dir__(self):
        return dir(object.__getattribute__(self, _VALUE))

    def __repr__(self):
        return repr(object.__getattribute__(self, _VALUE))

    def __str__(self):
        return str(object.__getattribute__(self, _VALUE))

    def __format__(self, spec):
        return format(object.__getattribute__(self, _VALUE), spec)

    def __hash__(self):
        return hash(object.__getattribute__(self, _VALUE))

    def __bool__(self):
        return bool(object.__getattribute__(self, _VALUE))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        value = object.__getattribute__(self, _VALUE)
        return value(*args, **kwargs) if kwargs else value(*args)

    def __copy__(self):
        return _shallow_copy(object.__getattribute__(self, _VALUE))

    def __deepcopy__(self, memo):
        return _deepcopy(object.__getattribute__(self, _VALUE), memo)

    def __reduce_ex__(self, protocol):
        return object.__getattribute__(self, _VALUE).__reduce_ex__(protocol)


# The delegates are shims too (``_cassette_method``, as :func:`_shim`'s): a
# program calling one itself — ``t.__add__(1.0)``, which 3.13+ load as the
# method of Tagged — calls, under a run of the value's context, the primal
# class's own method with the tagged value first (cassette.engine.call_shim),
# as the same call of a primal value would be seen.

def _named(function, name, method=None):
    """``function`` made a shim of method ``name`` (``method``: the primal
    class's, when known): named so, and marked for the engine."""
    function.__name__ = function.__qualname__ = name
    function._cassette_method = name if method is None else method
    return function


def _delegate_unary(function, name):
    def method(self):
        return function(object.__getattribute__(self, _VALUE))
    return _named(method, name)


def _delegate_binary(function, name, reflected=False):
    if reflected:
        def method(self, other):
            return function(_primal(other), object.__getattribute__(self, _VALUE))
    else:
        def method(self, other):
            return function(object.__getattribute__(self, _VALUE), _primal(other))
    return _named(method, name)


def _delegate_args(name):
    def method(self, *args, **kwargs):
        value = object.__getattribute__(self, _VALUE)
        return getattr(type(value), name)(value, *map(_primal, args), **kwargs)
    return _named(method, name)


def _install_delegates():
    binary = {
        "add": operator.add, "sub": operator.sub, "mul": operator.mul,
        "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
        "pow": operator.pow, "matmul": operator.matmul, "lshift": operator.lshift,
        "rshift": operator.rshift, "and": operator.and_, "or": operator.or_,
        "xor": operator.xor, "divmod": divmod,
    }
    for name, function in binary.items():
        setattr(Tagged, f"__{name}__", _delegate_binary(function, f"__{name}__"))
        setattr(Tagged, f"__r{name}__", _delegate_binary(function, f"__r{name}__",
                                                        reflected=True))
    inplace = {
        "iadd": operator.iadd, "isub": operator.isub, "imul": operator.imul,
        "itruediv": operator.itruediv, "ifloordiv": operator.ifloordiv,
        "imod": operator.imod, "ipow": operator.ipow, "imatmul": operator.imatmul,
        "ilshift": operator.ilshift, "irshift": operator.irshift, "iand": operator.iand,
        "ior": operator.ior, "ixor": operator.ixor,
    }
    for name, function in inplace.items():
        setattr(Tagged, f"__{name}__", _delegate_binary(function, f"__{name}__"))
    comparisons = {"lt": operator.lt, "le": operator.le, "eq": operator.eq,
                   "ne": operator.ne, "gt": operator.gt, "ge": operator.ge,
                   "contains": operator.contains, "getitem": operator.getitem,
                   "delitem": operator.delitem}
    for name, function in comparisons.items():
        setattr(Tagged, f"__{name}__", _delegate_binary(function, f"__{name}__"))
    unary = {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert,
             "abs": abs, "len": len, "iter": iter, "next": next, "reversed": reversed,
             "int": int, "float": float, "complex": complex, "index": operator.index,
             "bytes": bytes}
    for name, function in unary.items():
        setattr(Tagged, f"__{name}__", _delegate_unary(function, f"__{name}__"))
    for name in ("__round__", "__trunc__", "__floor__", "__ceil__", "__setitem__",
                 "__enter__", "__exit__", "__fspath__", "__length_hint__"):
        setattr(Tagged, name, _delegate_args(name))


_install_delegates()


def make_tagged(tag_, value, data):
    """``value`` tagged with ``tag_``, carrying metadata ``data`` (not
    checked: the caller converted it)."""
    made = tag_._types.get(type(value))
    tagged = _new(made if made is not None else tag_.tagged_type(type(value)))
    _set(tagged, _VALUE, value)
    _set(tagged, _TAG, tag_)
    _set(tagged, _DATA, data)
    return tagged


_new = object.__new__
_set = object.__setattr__
_get = object.__getattribute__


def tag_of(value):
    """The tag of ``value`` if it is tagged (by any context), else None."""
    if type(type(value)) is TaggedMeta:
        return object.__getattribute__(value, _TAG)
    return None


def _strip_all(value):
    """``value`` with every tag taken off, and the tagged layers removed,
    outermost first."""
    layers = []
    while isinstance(type(value), TaggedMeta):
        layers.append(value)
        value = object.__getattribute__(value, _VALUE)
    return value, layers


def _rewrap(value, layers):
    for layer in reversed(layers):
        value = make_tagged(object.__getattribute__(layer, _TAG), value,
                      object.__getattribute__(layer, _DATA))
    return value


# -- the API ---------------------------------------------------------------------

def _context_tag(ctx, who):
    if not isinstance(ctx, Context):
        raise TypeError(f"{who}: expected a cassette.Context instance, got {ctx!r}")
    return ctx.tag


def _require_tagging(ctx, who):
    if isinstance(ctx, Context):
        tag_ = ctx.tag
        if type(tag_) is Tag:
            return tag_
    tag_ = _context_tag(ctx, who)
    if tag_ is None:
        raise TaggingError(
            f"{who}: {type(ctx).__qualname__} context has no tagging; make one with "
            "cassette.enabletagging(ctx, f)")
    return tag_


def enabletagging(ctx: _C, f: Callable[..., Any]) -> _C:
    """A context like ``ctx`` with a fresh tag and an empty bindings cache."""
    if not isinstance(ctx, Context):
        raise TypeError(f"enabletagging: expected a cassette.Context instance, got {ctx!r}")
    if not callable(f):
        raise TypeError(f"enabletagging: expected the function the context will run, got {f!r}")
    return _similar(ctx, ctx.metadata, ctx.pass_, Tag(type(ctx)), BindingsCache())


def hastagging(ctx: Context) -> bool:
    """Whether ``ctx`` has tagging enabled."""
    return _context_tag(ctx, "hastagging") is not None


_allowed_cache = {}     # (context class, primal type) -> metadatatype's answer


def _forget_allowed(generation):
    _allowed_cache.clear()


# A context class that changes (``metadatatype`` assigned …) bumps the
# dispatch generation: the cached answers go.
_dispatch.on_generation_change(_forget_allowed)


def allowed_metadata(context_type, primal_type):
    """``context_type.metadatatype(primal_type)``, cached until a context
    class changes."""
    key = (context_type, primal_type)
    try:
        return _allowed_cache[key]
    except KeyError:
        pass
    except TypeError:           # an unhashable metaclass: no caching
        return context_type.metadatatype(primal_type)
    allowed = context_type.metadatatype(primal_type)
    # As the dispatch caches do (cassette.lifetimes): a class the program
    # can drop is never a key, one its module reaches is asked about again.
    droppable = ()
    for cls in (context_type, primal_type, allowed):
        if isinstance(cls, type) and cls.__flags__ & _HEAPTYPE:
            if not _callables.class_lives_with_its_module(cls):
                return allowed
            droppable += (cls,)
    if len(_allowed_cache) < 4096:
        _allowed_cache[key] = allowed
        if droppable:
            _dispatch.held_selections.note(_allowed_cache, key, droppable)
    return allowed


def _converted_metadata(ctx, value, data):
    if data is NoMetaData:
        return data
    primal_type = type(innermost(value))
    allowed = allowed_metadata(type(ctx), primal_type)
    if type(data) is allowed:
        return data
    context_name = type(ctx).__qualname__
    if allowed is None:
        raise TypeError(
            f"{context_name}.metadatatype({primal_type.__qualname__}) allows no metadata; "
            f"cannot tag a {primal_type.__qualname__} with {data!r}")
    if not isinstance(allowed, type):
        raise TypeError(f"{context_name}.metadatatype({primal_type.__qualname__}) returned "
                        f"{allowed!r}, not a type or None")
    primal_data, layers = _strip_all(data)
    if isinstance(primal_data, allowed):
        return data
    try:
        converted = allowed(primal_data)
    except Exception as error:
        raise TypeError(
            f"cannot convert metadata {primal_data!r} to {allowed.__qualname__}, the metadata "
            f"type {context_name} allows for {primal_type.__qualname__}: "
            f"{type(error).__name__}: {error}") from error
    if not isinstance(converted, allowed):
        raise TypeError(f"converting metadata {primal_data!r} with {allowed.__qualname__} "
                        f"gave a {type(converted).__qualname__}")
    return _rewrap(converted, layers)


def tag(value: Any, ctx: Context, metadata: Any = NoMetaData) -> Any:
    """``value`` tagged w.r.t. ``ctx``, carrying ``metadata``."""
    tag_ = _require_tagging(ctx, "tag")
    if type(type(value)) is TaggedMeta and _get(value, _TAG) is tag_:
        raise TaggingError(f"tag: the value is already tagged w.r.t. this "
                           f"{type(ctx).__qualname__} context")
    return make_tagged(tag_, value, _converted_metadata(ctx, value, metadata))


# The functions below are what a tool's handlers call for every operation:
# the common case (a context with tagging) is written out inline.

def istagged(x: Any, ctx: Context) -> bool:
    """Whether ``x`` is tagged w.r.t. ``ctx``."""
    tag_ = _context_tag(ctx, "istagged")
    return tag_ is not None and type(type(x)) is TaggedMeta and _get(x, _TAG) is tag_


def untag(x: Any, ctx: Context) -> Any:
    """The value ``x`` wraps if it is tagged w.r.t. ``ctx``, else ``x``."""
    if isinstance(ctx, Context):
        tag_ = ctx.tag
        if type(tag_) is Tag:
            if type(type(x)) is TaggedMeta and _get(x, _TAG) is tag_:
                return _get(x, _VALUE)
            return x
    tag_ = _require_tagging(ctx, "untag")
    if tag_of(x) is tag_:
        return _get(x, _VALUE)
    return x


def metadata(x: Any, ctx: Context) -> Any:
    """The metadata ``x`` carries w.r.t. ``ctx`` (``NoMetaData`` if none)."""
    if isinstance(ctx, Context):
        tag_ = ctx.tag
        if type(tag_) is Tag:
            if type(type(x)) is TaggedMeta and _get(x, _TAG) is tag_:
                return _get(x, _DATA)
            return NoMetaData
    tag_ = _require_tagging(ctx, "metadata")
    return _get(x, _DATA) if tag_of(x) is tag_ else NoMetaData


def hasmetadata(x: Any, ctx: Context) -> bool:
    """Whether ``x`` carries metadata w.r.t. ``ctx``."""
    return metadata(x, ctx) is not NoMetaData


def metameta(x: Any, ctx: Context) -> Any:
    """The per-component metadata of ``x`` w.r.t. ``ctx`` (``NoMetaMeta`` if
    none): what ``ctx``'s runs stored into the components of container or
    object ``x`` (see :func:`cassette.propagation.components`).  For a
    value tagged w.r.t. ``ctx`` it is that of the primal value it wraps:
    :func:`tag` gives metadata of the whole, and stores into the tagged
    object's attributes or elements give its components theirs."""
    tag_ = _require_tagging(ctx, "metameta")
    while tag_of(x) is tag_:
        x = untag(x, ctx)
    return _components(x, ctx)


def _components(x, ctx):
    """Recorded per-component metadata: none until the propagation layer
    is installed (:func:`install_components`)."""
    return NoMetaMeta


def install_components(components):
    """Plug in the propagation layer's ``components(x, ctx)``, which
    :func:`metameta` answers with.  Called once, when that layer loads."""
    global _components
    _components = components


def hasmetameta(x: Any, ctx: Context) -> bool:
    """Whether ``x`` carries per-component metadata w.r.t. ``ctx``."""
    return metameta(x, ctx) is not NoMetaMeta


def _type_tag_matches(T, ctx_or_type, who):
    if not isinstance(T, type):
        raise TypeError(f"{who}: expected a type, got {T!r}")
    made = _made_by.get(id(T))
    made_by = made[1]() if made is not None and made[0]() is T else None
    if made_by is None:
        return False
    if isinstance(ctx_or_type, Context):
        return made_by is ctx_or_type.tag
    if isinstance(ctx_or_type, type) and issubclass(ctx_or_type, Context):
        return issubclass(made_by.context_type, ctx_or_type)
    raise TypeError(f"{who}: expected a context or a context class, got {ctx_or_type!r}")


def istaggedtype(T: type, ctx_or_type: Context | type[Context]) -> bool:
    """Whether ``T`` is the type of values tagged w.r.t. ``ctx_or_type``."""
    return _type_tag_matches(T, ctx_or_type, "istaggedtype")


def untagtype(T: type, ctx_or_type: Context | type[Context]) -> type:
    """The type of the values that values of type ``T`` wrap, if ``T`` is a
    tagged type of ``ctx_or_type``; else ``T``."""
    if _type_tag_matches(T, ctx_or_type, "untagtype"):
        return T.primal_type
    return T


def untag_arguments(ctx, args, kwargs):
    """``(args, kwargs)`` with values tagged w.r.t. ``ctx`` replaced by the
    values they wrap (the same objects when none is)."""
    tag_ = ctx.tag
    if tag_ is None:
        return args, kwargs
    if any(tag_of(a) is tag_ for a in args):
        args = tuple(object.__getattribute__(a, _VALUE) if tag_of(a) is tag_ else a
                     for a in args)
    if kwargs and any(tag_of(v) is tag_ for v in kwargs.values()):
        kwargs = {k: object.__getattribute__(v, _VALUE) if tag_of(v) is tag_ else v
                  for k, v in kwargs.items()}
    return args, kwargs


def _accelerated():
    """With the Cython core in use, the core's versions of ``tag``,
    ``untag``, ``istagged`` and ``metadata``: they decide the common case
    without a Python frame and call the definitions above for every other
    (so behaviour and errors are those above)."""
    from .entry import IMPLEMENTATION
    if IMPLEMENTATION != "cython":
        return tag, untag, istagged, metadata
    from . import _core
    global _tag_died
    _tag_died = _core.forget_tag
    _core.install_tagging_api((tag, untag, istagged, metadata), Context, Tag, Tagged,
                              _allowed_cache, NoMetaData)
    return _core.tag, _core.untag, _core.istagged, _core.metadata


_python_api = (tag, untag, istagged, metadata)
tag, untag, istagged, metadata = _accelerated()


def own_mask(ctx, args):
    """Bit ``i`` set when ``args[i]`` is tagged w.r.t. ``ctx`` (see
    ``dispatch.own_mask``)."""
    tag_ = getattr(ctx, "tag", None)
    if tag_ is None:
        return 0
    mask = 0
    bit = 1
    for a in args:
        if tag_of(a) is tag_:
            mask |= bit
        bit <<= 1
    return mask


def selection_key(ctx, args, types):
    """See ``dispatch.selection_key``."""
    tag_ = getattr(ctx, "tag", None)
    if tag_ is None:
        return types
    mask = 0
    bit = 1
    for index, a in enumerate(args):
        if tag_of(a) is tag_:
            if not mask:
                types = list(types)
            types[index] = type(object.__getattribute__(a, _VALUE))
            mask |= bit
        bit <<= 1
    return tuple(types) + (mask,) if mask else types


_dispatch.install_tagging(
    tagged=Tagged, own_mask=own_mask, selection_key=selection_key,
    untag_arguments=untag_arguments,
    sees_tags=(tag, untag, istagged, metadata, hasmetadata, metameta, hasmetameta)
    + _python_api)
