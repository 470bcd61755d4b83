"""Contexts (reference §2): the classes whose instances ``overdub`` runs code under.

Contract
--------
* ``class Ctx(Context): ...`` defines a context class (the analogue of
  Cassette's ``@context Ctx``); ``context("Ctx")`` makes one without a class
  statement.  The class made by :func:`context` gets the *caller's* module as
  ``__module__`` and the name as ``__qualname__``, so a module-level
  ``Ctx = context("Ctx")`` pickles by reference like a class defined there.
* ``Ctx(*, metadata=None, pass_=NoPass)``: keyword-only; positional arguments
  and a ``pass_`` that is not a :class:`cassette.Pass` raise ``TypeError``.
* Instance fields: ``metadata``, ``pass_``, ``tag`` and ``bindingscache``
  (the last two ``None`` unless set through :func:`similarcontext`; tagging
  sets them).  Fields are ordinary attributes (``__slots__``).
* ``_runtime`` is a private per-instance cache for the engine (``None`` on a
  new instance).  It is never pickled, copied or carried over by
  :func:`similarcontext`.
* Hooks are methods: a method named ``prehook``, ``posthook``, ``execute`` or
  ``fallback`` in a context class body is a handler registered for that class
  and ``cassette.ANY`` (see :mod:`cassette.dispatch`).  Setting or deleting one
  of those class attributes later re-registers / removes it; the change takes
  effect at the next operation.  Any class-dict value works that Python would
  bind on attribute access (functions, staticmethods, classmethods, callable
  objects).
* :class:`Context`'s own ``prehook``/``posthook``/``execute``/``fallback``
  are the *default behaviours* (nothing / nothing / ``OverdubInstead`` /
  call ``f`` with untagged arguments), so ``super().execute(f, *args)`` from
  an override runs the default, never the override again.  They are not
  registered as handlers.
* ``intercept`` (class attribute, a :class:`cassette.operations.Intercept`,
  default ``Intercept.ALL``) narrows which rows of reference §3.1 are intercepted;
  changing it, ``metadatatype`` or ``__bases__`` on a class bumps the dispatch
  generation so rewritten code notices.
* ``Ctx.metadatatype(T)`` (classmethod) says which metadata type values of
  type ``T`` may carry; the default ``None`` allows none.
* ``metadata_loss`` (class attribute, one of :data:`METADATA_LOSS`, default
  ``"drop"``) says what a tagging run does when a primitive without a
  handler drops its tagged arguments' metadata (reference §6): nothing,
  warn (``MetadataLossWarning``) or raise (``MetadataLossError``).  Any
  other value is a ``TypeError`` when the class is made or the attribute
  set; changing it bumps the dispatch generation.
* Contexts pickle (and ``copy``) when their metadata, pass, tag and bindings
  cache do; extra attributes of subclasses (``__dict__`` or extra slots) are
  carried along.  Contexts compare and hash by identity.
* ``repr(ctx)`` is ``Ctx(metadata=...)``, listing only non-default fields.
"""

from __future__ import annotations

import reprlib
import sys
import types
from typing import Any, Callable, ClassVar, Never, Self, TypeVar

from . import dispatch as _dispatch
from .operations import Intercept
from .passes import NoPass, Pass
from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_FunctionType = types.FunctionType
_getframe = sys._getframe

__all__ = ["ContextMeta", "Context", "checks_metadata_loss", "context", "similarcontext"]

_HOOK_NAMES = frozenset(_dispatch.HOOK_NAMES)
_INVALIDATING = frozenset({"intercept", "metadatatype", "metadata_loss", "__bases__"})

#: The values of ``Context.metadata_loss``: what a tagging run does when a
#: primitive without a handler drops metadata.
METADATA_LOSS = ("drop", "warn", "raise")
_OWN_SLOTS = ("metadata", "pass_", "tag", "bindingscache", "_runtime", "__weakref__")


_F = TypeVar("_F", bound=Callable[..., Any])
_C = TypeVar("_C", bound="Context")


def _default_hook(func: _F) -> _F:
    func._cassette_default_hook = True
    return func


def _hook_handler(cls, name, value):
    """The dispatch handler for class attribute ``name = value`` of ``cls``,
    or ``None`` for the base defaults.  Raises ``TypeError`` if not callable."""
    if getattr(value, "_cassette_default_hook", False):
        return None
    if isinstance(value, _FunctionType):
        return value
    if hasattr(type(value), "__get__"):
        # staticmethod, classmethod, other descriptors: bind as `ctx.name` would.
        def handler(ctx, /, *args, **kwargs):
            return value.__get__(ctx, type(ctx))(*args, **kwargs)
    elif callable(value):
        def handler(ctx, /, *args, **kwargs):
            return value(*args, **kwargs)
    else:
        raise TypeError(f"context hook {cls.__qualname__}.{name} must be a method "
                        f"(callable), got {value!r}")
    handler.__name__ = name
    handler.__qualname__ = f"{cls.__qualname__}.{name}"
    handler.__wrapped__ = value
    return handler


def _check_intercept(cls_name, value):
    if not isinstance(value, Intercept):
        raise TypeError(f"{cls_name}.intercept must be a cassette.operations.Intercept "
                        f"flag (e.g. Intercept.ALL or Intercept.CALLS), got {value!r}")


def checks_metadata_loss(ctx_type):
    """Whether tagging runs of ``ctx_type`` look for metadata lost: its
    ``metadata_loss`` is not ``"drop"``."""
    return getattr(ctx_type, "metadata_loss", "drop") != "drop"


def _check_metadata_loss(cls_name, value):
    if type(value) is not str or value not in METADATA_LOSS:
        raise TypeError(f"{cls_name}.metadata_loss must be one of "
                        f"{', '.join(map(repr, METADATA_LOSS))}, got {value!r}")


def _extra_slots(cls):
    """The slots ``cls``'s classes below :class:`Context` add (names
    mangled as the interpreter stores them), computed once per class."""
    names = []
    for klass in cls.__mro__:
        if klass.__name__ == "Context" and klass.__module__ == __name__:
            break
        slots = klass.__dict__.get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        for slot in slots:
            if slot in ("__dict__", "__weakref__"):
                continue
            if slot.startswith("__") and not slot.endswith("__"):
                slot = f"_{klass.__name__.lstrip('_')}{slot}"
            names.append(slot)
    return tuple(names)


class ContextMeta(type):
    """Metaclass of contexts: keeps :mod:`cassette.dispatch` in step with the
    class-body hooks and the ``intercept`` knob (see the module docstring)."""

    def __new__(mcls, name, bases, namespace, **kwargs):
        if "intercept" in namespace:
            _check_intercept(name, namespace["intercept"])
        if "metadata_loss" in namespace:
            _check_metadata_loss(name, namespace["metadata_loss"])
        cls = super().__new__(mcls, name, bases, namespace, **kwargs)
        type.__setattr__(cls, "_cassette_extra_slots", _extra_slots(cls))
        handlers = {hook: _hook_handler(cls, hook, namespace[hook])
                    for hook in _dispatch.HOOK_NAMES if hook in namespace}
        for hook, handler in handlers.items():
            if handler is not None:
                _dispatch.define_class_hook(cls, hook, handler)
        return cls

    def __setattr__(cls, name, value):
        if name in _HOOK_NAMES:
            handler = _hook_handler(cls, name, value)
            super().__setattr__(name, value)
            _dispatch.define_class_hook(cls, name, handler)
            return
        if name == "intercept":
            _check_intercept(cls.__qualname__, value)
        elif name == "metadata_loss":
            _check_metadata_loss(cls.__qualname__, value)
        super().__setattr__(name, value)
        if name in _INVALIDATING:
            _dispatch.invalidate()

    def __delattr__(cls, name):
        super().__delattr__(name)
        if name in _HOOK_NAMES:
            _dispatch.define_class_hook(cls, name, None)
        elif name in _INVALIDATING:
            _dispatch.invalidate()


def _check_pass(pass_, where):
    if not isinstance(pass_, Pass):
        raise TypeError(
            f"{where}: pass_ must be a cassette.Pass (wrap a transform function with "
            f"cassette.Pass(func) or decorate it with @cassette.Pass), got {pass_!r}")


class Context(metaclass=ContextMeta):
    """Base class of execution contexts (see the module docstring)."""

    __slots__ = _OWN_SLOTS
    _cassette_context_class = True
    intercept: ClassVar[Intercept] = Intercept.ALL
    #: What a tagging run does when a primitive drops metadata (METADATA_LOSS).
    metadata_loss: ClassVar[str] = "drop"

    #: What the context was made with (``metadata=``), shared, never copied.
    metadata: Any
    #: The context's pass (``pass_=``); ``NoPass`` by default.
    pass_: Pass
    #: The context's tag (a ``cassette.tagging.Tag``) once tagging is enabled, else None.
    tag: Any
    #: The context's bindings cache under tagging, else None.
    bindingscache: Any

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        return _with_fields(cls, None, NoPass, None, None)

    def __init__(self, *args: Never, metadata: Any = None, pass_: Pass = NoPass) -> None:
        if args:
            raise TypeError(
                f"{type(self).__qualname__}() takes keyword arguments only "
                f"(metadata=..., pass_=...), got {len(args)} positional argument"
                f"{'s' if len(args) != 1 else ''}")
        _check_pass(pass_, f"{type(self).__qualname__}()")
        self.metadata = metadata
        self.pass_ = pass_

    # -- hooks: the default behaviours ------------------------------------------

    @_default_hook
    def prehook(self, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> None:
        """Run before every operation ``f(*args, **kwargs)``.  Default: nothing."""
        return _dispatch.prehook.default(self, f, *args, **kwargs)

    @_default_hook
    def posthook(self, output: Any, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> None:
        """Run after every operation that returned ``output``.  Default: nothing."""
        return _dispatch.posthook.default(self, output, f, *args, **kwargs)

    @_default_hook
    def execute(self, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Replace an operation: return its result, or ``cassette.OverdubInstead``
        to run it as usual.  Default: ``OverdubInstead``."""
        return _dispatch.execute.default(self, f, *args, **kwargs)

    @_default_hook
    def fallback(self, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run an operation that has no body to overdub.  Default: call ``f`` with
        its arguments untagged."""
        return _dispatch.fallback.default(self, f, *args, **kwargs)

    @classmethod
    def metadatatype(cls, T: type) -> type | None:
        """The metadata type values of type ``T`` may carry; ``None``: none allowed."""
        return None

    # -- pickling, copying, repr ------------------------------------------------

    def _extra_state(self):
        """Attributes beyond the Context fields (subclass slots and ``__dict__``)."""
        state = {}
        for slot in type(self)._cassette_extra_slots:
            try:
                state[slot] = object.__getattribute__(self, slot)
            except AttributeError:
                pass
        d = getattr(self, "__dict__", None)
        if d:
            state.update(d)
        return state

    def __reduce__(self):
        return (_restore_context,
                (type(self), self.metadata, self.pass_, self.tag, self.bindingscache),
                self._extra_state() or None)

    def __setstate__(self, state):
        for key, value in state.items():
            object.__setattr__(self, key, value)

    @reprlib.recursive_repr()
    def __repr__(self):
        parts = []
        if self.metadata is not None:
            parts.append(f"metadata={self.metadata!r}")
        if self.pass_ is not NoPass:
            parts.append(f"pass_={self.pass_!r}")
        if self.tag is not None:
            parts.append(f"tag={self.tag!r}")
        if self.bindingscache is not None:
            parts.append(f"bindingscache=<{type(self.bindingscache).__name__}>")
        return f"{type(self).__qualname__}({', '.join(parts)})"


def _restore_context(cls, metadata, pass_, tag, bindingscache):
    """Rebuild a context from its fields (pickle / copy)."""
    if not (isinstance(cls, type) and issubclass(cls, Context)):
        raise TypeError(f"cannot restore a context of non-context class {cls!r}")
    return _with_fields(cls, metadata, pass_, tag, bindingscache)


def _with_fields(cls, metadata, pass_, tag, bindingscache):
    """A new context of class ``cls`` with these fields (and no runtime)."""
    new = _new_object(cls)
    new.metadata = metadata
    new.pass_ = pass_
    new.tag = tag
    new.bindingscache = bindingscache
    new._runtime = None
    return new



class _Unchanged:
    __slots__ = ()

    def __repr__(self):
        return "<unchanged>"


_UNCHANGED = _Unchanged()


def similarcontext(ctx: _C, *, metadata: Any = _UNCHANGED, pass_: Any = _UNCHANGED,
                   tag: Any = _UNCHANGED, bindingscache: Any = _UNCHANGED) -> _C:
    """A new context of ``type(ctx)`` with the given fields replaced.

    Fields not given are shared with ``ctx`` (not copied); so are extra
    attributes of subclasses.  The engine's private ``_runtime`` cache starts
    empty.  ``TypeError`` for a non-context or a ``pass_`` that is not a Pass.
    """
    if not isinstance(ctx, Context):
        raise TypeError(f"similarcontext: expected a cassette.Context instance, got {ctx!r}")
    if pass_ is not _UNCHANGED:
        _check_pass(pass_, "similarcontext")
    return _similar(ctx,
                    ctx.metadata if metadata is _UNCHANGED else metadata,
                    ctx.pass_ if pass_ is _UNCHANGED else pass_,
                    ctx.tag if tag is _UNCHANGED else tag,
                    ctx.bindingscache if bindingscache is _UNCHANGED else bindingscache)


def _similar(ctx, metadata, pass_, tag, bindingscache):
    """:func:`similarcontext` of a context, its arguments checked (what
    ``enabletagging`` runs for every derivative a tool takes)."""
    cls = type(ctx)
    new = _with_fields(cls, metadata, pass_, tag, bindingscache)
    if cls._cassette_extra_slots or getattr(ctx, "__dict__", None):
        extra = ctx._extra_state()
        if extra:
            new.__setstate__(extra)
    return new


_new_object = object.__new__


def context(name: str, /) -> type[Context]:
    """Return a new :class:`Context` subclass named ``name``.

    The class belongs to the calling module (``__module__``) with
    ``__qualname__ == name``, so binding it to the same name at module level
    makes it (and its instances) picklable.
    """
    if not isinstance(name, str):
        raise TypeError(f"context() expects a class name (str), got {name!r}")
    if not name.isidentifier():
        raise ValueError(f"context() expects an identifier as the class name, got {name!r}")
    try:
        module = _getframe(1).f_globals.get("__name__", "__main__")
    except ValueError:          # no caller frame (embedded interpreters)
        module = "__main__"
    return ContextMeta(name, (Context,), {"__module__": module, "__qualname__": name})
