"""Propagation (reference §6): metadata that flows, without user code, through
the containers, objects and module globals a tagged run touches.

The model
---------
The program's data always holds primal values.  When a tagged run stores a
value tagged w.r.t. its context — into a list, tuple, dict or set element,
an object's attribute, a module global — the container receives the value
the tag wraps, and the context's :class:`~cassette.tagging.BindingsCache`
records the metadata for that component together with the identity of the
value stored.  A later read of the component in a run of the same context
gives the tagged value back, as long as the component still holds that very
value (anything else — code outside the context changed it, an untracked
builtin moved it and the identity search below cannot find it — reads as an
ordinary value).  So:

* a wrapper never leaks into the program's data, and builtins, C code and
  the caller of ``overdub`` only ever see primal values;
* containers and objects keep per-component metadata from birth (a list
  built in the run, an object constructed in it) and so do containers the
  run receives or finds in module globals (reference §6: their metadata lives in
  the bindings cache, the module holds primal values);
* list operations that move elements without cassette seeing each move
  (``sort``, ``reverse``, slice assignment …) keep metadata by matching
  element identities.

What runs where
---------------
* :func:`fallback` is the default fallback under tagging (the runtimes call
  it through ``dispatch.tagging_fallback``): known container, attribute and
  conversion primitives propagate metadata, everything else is called with
  its arguments untagged.
* The ``TAGGING_SLOTS`` are what tagged runs' rewritten code calls for the
  syntax that builds or takes apart containers (displays, comprehensions,
  unpacking, star-arguments), compares identities (``is``) and reads or
  writes module globals.  A runtime whose enclosing runtime also propagates
  passes each result on to it, so nested tagging contexts each see their own
  tags.
"""

import collections
import operator
import sys
import types
import warnings
import weakref

from . import callables, dispatch, tagging
from .context import checks_metadata_loss
from .errors import MetadataLossError, MetadataLossWarning
from ._singletons import NoMetaData, NoMetaMeta, TAGGED_DATA_SLOT, TAGGED_VALUE_SLOT
from .tagging import Meta, allowed_metadata, make_tagged, tag_of
# Propagation calls the program's primitives (which may call back into its
# code): its frames keep the program's builtins (see cassette/_builtins.py).
from ._builtins import (BaseException, Exception, KeyError, TypeError, any, bool, callable,
                        dict, enumerate, frozenset, getattr, hash, id, isinstance, issubclass,
                        iter, len, list, max, min, next, object, range, set, setattr, slice,
                        str, tuple, type, zip)

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_defaultdict = collections.defaultdict
_deque = collections.deque
_getframe = sys._getframe
_getrefcount = sys.getrefcount
_iadd = operator.iadd
_index = operator.index
_length_hint = operator.length_hint
_modules = sys.modules
_ref = weakref.ref
_warn = warnings.warn

__all__ = ["TAGGING_SLOTS", "components", "fallback"]

_VALUE, _DATA = TAGGED_VALUE_SLOT, TAGGED_DATA_SLOT
_FunctionType = types.FunctionType
_MethodType = types.MethodType
_get = object.__getattribute__


# -- values ----------------------------------------------------------------------

_innermost = tagging.innermost


#: What :func:`_split` gives for the metadata of a value ``tag`` did not tag
#: (any object, None included, may be metadata).
_UNTAGGED = object()


def _split(value, tag):
    """``(primal, data)``: ``value`` without ``tag`` and the metadata it
    carried (``_UNTAGGED`` when ``value`` is not tagged with ``tag``)."""
    if tag_of(value) is tag:
        return _get(value, _VALUE), _get(value, _DATA)
    return value, _UNTAGGED


def _primal(value, tag):
    return _get(value, _VALUE) if tag_of(value) is tag else value


def _untag_all(args, tag):
    return tuple(_get(a, _VALUE) if tag_of(a) is tag else a for a in args)


# -- the records of the bindings cache --------------------------------------------

class _Record:
    """What one context knows of one container, object or namespace:
    ``items`` (a list parallel to a list or tuple, else a dict by key) and
    ``attrs`` (by attribute name); each entry ``(value, data)`` — the value
    stored, tags off, and its metadata."""

    __slots__ = ("target", "weak", "items", "attrs")

    def __init__(self, target, weak):
        self.target = target
        self.weak = weak
        self.items = None
        self.attrs = None


def _cache(ctx):
    return ctx.bindingscache


def _record(cache, obj):
    """The record of ``obj`` in ``cache``, or None."""
    record = cache.entries.get(id(obj))
    if record is None:
        return None
    target = record.target() if record.weak else record.target
    return record if target is obj else None


def _new_record(cache, obj):
    """The record of ``obj``, made if needed.  Objects that support weak
    references are held weakly; others (lists, dicts, tuples …) strongly,
    and dropped by :func:`_sweep` once nothing else holds them."""
    key = id(obj)
    entries = cache.entries
    record = entries.get(key)
    if record is not None:
        target = record.target() if record.weak else record.target
        if target is obj:
            return record
    record = None
    if type(obj).__weakrefoffset__:     # lists, tuples, dicts … have none: no exception
        try:
            record = _Record(_ref(obj, _forgetter(entries, key)), True)
        except TypeError:
            pass
    if record is None:
        record = _Record(obj, False)
    entries[key] = record
    cache.additions += 1
    if len(entries) > cache.sweep_at:
        _sweep(cache)
    return record


def record_parts(ctx, sequence, parts):
    """Record ``parts`` (one ``(value, metadata)`` or None per element) for
    list or tuple ``sequence`` (the core calls it too: see
    :func:`cassette.dispatch.record_parts`)."""
    _new_record(_cache(ctx), sequence).items = parts


def _forgetter(entries, key):
    def forget(ref):
        record = entries.get(key)
        if record is not None and record.target is ref:
            del entries[key]
    return forget


#: References to a strongly held target that mean nobody else holds it: the
#: record's and the one ``record.target`` gives getrefcount (the same on
#: every supported release: tests/test_tagging_propagation.py).
_ONLY_OURS = 2


def _sweep(cache):
    """Drop the records of strongly held targets nothing else holds.  (The
    records of weakly held ones go when their target dies.)"""
    entries = cache.entries
    dead = [key for key, record in entries.items()
            if not record.weak and _getrefcount(record.target) <= _ONLY_OURS]
    for key in dead:
        del entries[key]
    cache.sweep_at = max(cache.FIRST_SWEEP, 2 * len(entries))


def components(x, ctx, _open=None):
    """The per-component metadata ``ctx`` keeps for container or object
    ``x`` (used by :func:`cassette.metameta`): a list (one ``Meta`` per
    element) for a list or tuple, a dict (key -> ``Meta``) for a dict or
    set, a dict (attribute -> ``Meta``) for an object; ``NoMetaMeta`` when
    it keeps none.  A component that is itself a container or object with
    per-component metadata reports it as its ``Meta.meta``, to any depth
    (``(x, [x], 1)`` gives ``[Meta(m), Meta(NoMetaData, [Meta(m)]),
    Meta()]``, as Cassette's tagged tuples do); a container met again
    inside itself reports ``NoMetaMeta`` there."""
    cache = _cache(ctx)
    record = None if cache is None else _record(cache, x)
    if record is None:
        return NoMetaMeta
    _open = set() if _open is None else _open
    if id(x) in _open:
        return NoMetaMeta
    _open.add(id(x))
    try:
        return _recorded_components(x, ctx, record, _open)
    finally:
        _open.discard(id(x))


def _recorded_components(x, ctx, record, open_):
    def meta(part, value):
        nested = components(value, ctx, open_)
        if part is None:
            return None if nested is NoMetaMeta else Meta(NoMetaData, nested)
        return Meta(part[1], nested)

    if record.items is not None:
        if isinstance(x, (list, tuple)):
            parts = _sequence_parts(record, x, check=True)
            metas = [meta(p, v) for p, v in zip(parts, x)]
            if any(m is not None for m in metas):
                return [Meta() if m is None else m for m in metas]
        elif isinstance(x, (set, frozenset)):
            found = {element: meta(part, element)
                     for element, part in _set_parts(record, x).items()}
            if found:
                return found
        elif isinstance(x, dict):
            found = {}
            for key, part in record.items.items():
                found_value, value = _lookup_value(x, key)
                if found_value and part[0] is _innermost(value):
                    found[key] = meta(part, value)
            if found:
                return found
    if record.attrs:
        found = {}
        for name, part in record.attrs.items():
            try:
                value = _get(x, name)
            except BaseException:
                continue
            if part[0] is _innermost(value):
                found[name] = meta(part, value)
        if found:
            return found
    return NoMetaMeta


def _lookup_value(container, key):
    """``(True, value)`` of ``key`` in a dict or set ``container``, or
    ``(False, None)``.  "Absent" is an object made here: the program can
    reach a module's sentinel, and store it."""
    if isinstance(container, dict):
        absent = object()
        value = dict.get(container, key, absent)
        return (False, None) if value is absent else (True, value)
    return (True, key) if key in container else (False, None)


# -- sequences: a list of parts parallel to the elements --------------------------

def _sequence_parts(record, seq, check=False):
    """The record's parts of ``seq``: one per element.  When their number
    differs from the elements' (or ``check`` finds an element that is not
    the one recorded), something cassette did not see moved the elements:
    the parts are matched again by identity — each element keeps the
    metadata recorded for the same object (the first unclaimed one).
    Without ``check``, a read compares its own element (see
    :func:`_read_element`)."""
    parts = record.items
    n = len(seq)
    if type(parts) is list and len(parts) == n:
        if not check:
            return parts
        for i in range(n):
            part = parts[i]
            if part is not None and part[0] is not _innermost(seq[i]):
                break
        else:
            return parts
    return _rematched(record, seq)


def _rematched(record, seq):
    parts = record.items
    pool = _defaultdict(_deque)
    if type(parts) is list:
        for part in parts:
            if part is not None:
                pool[id(part[0])].append(part)
    parts = []
    for element in seq:
        queue = pool.get(id(_innermost(element)))
        parts.append(queue.popleft() if queue else None)
    record.items = parts
    return parts


def _derived_parts(source_record, source, result):
    """Parts for the sequence ``result`` whose elements come from ``source``
    (a slice, a copy, a sorted version): matched by identity."""
    pool = _defaultdict(_deque)
    for part in _sequence_parts(source_record, source):
        if part is not None:
            pool[id(part[0])].append(part)
    parts = []
    found = False
    for element in result:
        queue = pool.get(id(_innermost(element)))
        if queue:
            parts.append(queue.popleft())
            found = True
        else:
            parts.append(None)
    return parts if found else None


def _read_element(tag, record, seq, index, value):
    """``value`` (``seq[index]``) tagged with the metadata recorded for it."""
    try:
        i = _index(index)
    except TypeError:
        return value
    parts = _sequence_parts(record, seq)
    if i < 0:
        i += len(parts)
    if 0 <= i < len(parts):
        part = parts[i]
        if part is not None:
            primal = _innermost(value)
            if part[0] is not primal:
                # Moved or replaced behind cassette's back: match again.
                part = _rematched(record, seq)[i]
            if part is not None and part[0] is primal:
                return make_tagged(tag, value, part[1])
    return value


def _with_parts(cache, result, parts):
    if parts is not None:
        _new_record(cache, result).items = parts
    return result


# -- containers built with tagged values inside -----------------------------------

def record_built(ctx, container):
    """``container`` (just built by the program) with the values tagged
    w.r.t. ``ctx`` replaced by their primal values, their metadata recorded.
    A tuple is rebuilt (it is new: nobody else holds it yet)."""
    tag = ctx.tag
    kind = type(container)
    if kind is list:
        parts = None
        for i, element in enumerate(container):
            if tag_of(element) is tag:
                if parts is None:
                    parts = [None] * len(container)
                primal = _get(element, _VALUE)
                container[i] = primal
                parts[i] = (_innermost(primal), _get(element, _DATA))
        if parts is not None:
            record_parts(ctx, container, parts)
        return container
    if kind is tuple:
        if not any(tag_of(element) is tag for element in container):
            return container
        parts = []
        values = []
        for element in container:
            primal, data = _split(element, tag)
            values.append(primal)
            parts.append(None if data is _UNTAGGED else (_innermost(primal), data))
        result = tuple(values)
        record_parts(ctx, result, parts)
        return result
    if kind is dict:
        if not any(tag_of(v) is tag or tag_of(k) is tag for k, v in container.items()):
            return container
        entries = list(container.items())
        container.clear()
        items = {}
        for key, value in entries:
            key = _primal(key, tag)
            primal, data = _split(value, tag)
            container[key] = primal
            if data is not _UNTAGGED:
                items[key] = (_innermost(primal), data)
        if items:
            _new_record(_cache(ctx), container).items = items
        return container
    if kind is set or kind is frozenset:
        if not any(tag_of(element) is tag for element in container):
            return container
        elements = list(container)
        items = {}
        primals = []
        for element in elements:
            primal, data = _split(element, tag)
            primals.append(primal)
            if data is not _UNTAGGED:
                items[id(_innermost(primal))] = (_innermost(primal), data)
        if kind is set:
            container.clear()
            container.update(primals)
        else:
            container = frozenset(primals)      # new: nobody else holds it yet
        if items:
            record = _new_record(_cache(ctx), container)
            if type(record.items) is dict:
                items = {**record.items, **items}
            record.items = items
        return container
    return container


def _note_item(ctx, container, key, primal, data):
    """Record (or forget) the metadata of ``container[key]``.  A key that
    cannot be hashed (an index array into a ``flatiter`` …) is not
    recorded: the store itself has happened, the metadata goes."""
    try:
        hash(key)
    except Exception:
        return
    if data is not _UNTAGGED:
        record = _new_record(_cache(ctx), container)
        if type(record.items) is not dict:
            record.items = {}
        record.items[key] = (_innermost(primal), data)
    else:
        record = _record(_cache(ctx), container)
        if record is not None and type(record.items) is dict:
            record.items.pop(key, None)


def extended(ctx, source, container):
    """After a display's ``LIST_EXTEND``/``SET_UPDATE``/``DICT_UPDATE``/
    ``DICT_MERGE`` added ``source``'s items to ``container``: tagged values
    the source produced become primal, and the source's recorded metadata
    carries over."""
    record_built(ctx, container)
    cache = _cache(ctx)
    record = _record(cache, source)
    if record is None or record.items is None:
        return
    if type(container) is list and isinstance(source, (list, tuple)):
        target = _new_record(cache, container)
        pool = list(target.items) if type(target.items) is list else []
        target.items = pool + _sequence_parts(record, source)
        _rematched(target, container)
    elif type(container) is set:
        _match_set(cache, container, (source,))
    elif type(container) is dict and type(record.items) is dict:
        _copy_items(cache, record, container)


def _copy_items(cache, record, container):
    """Entries of ``record`` (of a dict or set) that hold for ``container``
    too, added to its record."""
    target = _new_record(cache, container)
    if type(target.items) is not dict:
        target.items = {}
    for key, part in record.items.items():
        found_value, value = _lookup_value(container, key)
        if found_value and part[0] is _innermost(value):
            target.items[key] = part


def _read_item(tag, record, key, value):
    items = record.items
    if type(items) is dict:
        try:
            part = items.get(key)
        except TypeError:
            return value
        if part is not None and part[0] is _innermost(value):
            return make_tagged(tag, value, part[1])
    return value


# -- sets: metadata by element identity ---------------------------------------------
#
# A set's record maps ``id(element)`` to ``(element, data)``: the metadata of
# the very object the set holds.  Of equal values, a set keeps the one it
# had (``s.add(x)`` keeps the element equal to ``x`` already there), and so
# keeps that one's metadata.  Identity, not equality, so that no ``__eq__``
# or ``__hash__`` of the program runs because cassette looked.

def _set_elements(container):
    """The elements of a set or frozenset, iterated without program code
    (a subclass's ``__iter__``)."""
    return (set.__iter__ if isinstance(container, set) else frozenset.__iter__)(container)


def _parts_by_identity(cache, value):
    """``id(element) -> part`` for the elements of ``value`` (a list, tuple,
    set or frozenset) that carry metadata in ``cache``; empty otherwise."""
    record = _record(cache, value)
    if record is None or record.items is None:
        return {}
    if isinstance(value, (set, frozenset)):
        return _set_parts_by_id(record) if type(record.items) is dict else {}
    if isinstance(value, (list, tuple)):
        return {id(part[0]): part for part in _sequence_parts(record, value) if part is not None}
    return {}


def _set_parts_by_id(record):
    items = record.items
    return items if type(items) is dict else {}


def _set_parts(record, container):
    """``element -> part`` for the elements ``container`` (a set or
    frozenset) holds that carry metadata in ``record``."""
    items = record.items
    if type(items) is not dict or not items:
        return {}
    found = {}
    for element in _set_elements(container):
        part = items.get(id(element))
        if part is not None and part[0] is element:
            found[element] = part
    return found


def _match_set(cache, container, sources):
    """After an operation that made or changed set ``container`` from its
    own elements and those of ``sources``: each element it holds keeps the
    metadata recorded for that very object, in its own record or a
    source's; metadata of elements it no longer holds is forgotten."""
    pool = {}
    for source in sources:
        if source is not container:
            pool.update(_parts_by_identity(cache, source))
    own = _record(cache, container)
    if own is not None and type(own.items) is dict:
        pool.update(own.items)
    if not pool:
        return
    items = {}
    for element in _set_elements(container):
        part = pool.get(id(element))
        if part is not None and part[0] is element:
            items[id(element)] = part
    if own is None:
        if not items:
            return
        own = _new_record(cache, container)
    own.items = items


def _read_set_element(tag, record, value):
    """``value`` (an element of the set of ``record``, perhaps tagged by an
    enclosing context already) tagged with the metadata recorded for it."""
    items = record.items
    if type(items) is dict:
        element = _innermost(value)
        part = items.get(id(element))
        if part is not None and part[0] is element:
            return make_tagged(tag, value, part[1])
    return value


def list_to_tuple(ctx, container):
    """A display's list made a tuple (``(*a, b)``, ``f(*a, b)``): the tuple
    keeps the list's recorded metadata."""
    result = tuple(container)
    record = _record(_cache(ctx), container)
    if record is not None and record.items is not None:
        _with_parts(_cache(ctx), result, _derived_parts(record, container, result))
    return result


# -- the slots rewritten code calls --------------------------------------------------
#
# Each maker returns the callable bound into code rewritten for a runtime of
# ``ctx`` (which may have no tagging itself when only an enclosing context
# has); ``outer`` is the enclosing runtime's callable for the same slot, or
# None.  Stores are done by the outermost context (each inner one hands on
# the value it took its tag off); reads are tagged by the outermost first.

def _tags(ctx):
    return ctx.tag is not None


def _store_maker(store, plain):
    """A slot ``(…, value, container)`` that stores: ``plain`` stores without
    tagging, ``store(ctx, …, put)`` strips this context's tag and calls
    ``put`` (the outer slot, or ``plain``)."""
    def make(ctx, outer):
        put = outer if outer is not None else plain
        if not _tags(ctx):
            return put

        def slot(*operands):
            return store(ctx, put, *operands)
        return slot
    return make


def _plain_append(value, container):
    container.append(value)


def _plain_add(value, container):
    container.add(value)


def _plain_map_add(key, value, container):
    container[key] = value


def _store_append(ctx, put, value, container):
    primal, data = _split(value, ctx.tag)
    cache = _cache(ctx)
    record = _record(cache, container)
    if data is _UNTAGGED and record is None:
        return put(primal, container)
    if record is None:
        record = _new_record(cache, container)
    parts = _sequence_parts(record, container)
    put(primal, container)
    parts.append(None if data is _UNTAGGED else (_innermost(primal), data))
    return None


def _store_add(ctx, put, value, container):
    primal, data = _split(value, ctx.tag)
    before = len(container)
    put(primal, container)
    if len(container) != before:            # stored (else an equal one stays)
        _note_set_element(_cache(ctx), container, _innermost(primal), data)


def _note_set_element(cache, container, element, data):
    """``element`` was just stored into set ``container``, carrying ``data``."""
    if data is not _UNTAGGED:
        record = _new_record(cache, container)
        if type(record.items) is not dict:
            record.items = {}
        record.items[id(element)] = (element, data)
    else:
        record = _record(cache, container)
        if record is not None and type(record.items) is dict:
            record.items.pop(id(element), None)


def _store_map_add(ctx, put, key, value, container):
    key = _primal(key, ctx.tag)
    primal, data = _split(value, ctx.tag)
    put(key, primal, container)
    _note_item(ctx, container, key, primal, data)


def _chain_maker(own, plain):
    """A slot ``(x, …) -> x'`` applied by each context in turn, innermost
    first (``built``, ``list_to_tuple``, ``extended``)."""
    def make(ctx, outer):
        if not _tags(ctx):
            return outer if outer is not None else plain
        if outer is None:
            def slot(*operands):
                return own(ctx, *operands)
        else:
            def slot(first, *rest):
                return outer(own(ctx, first, *rest), *rest)
        return slot
    return make


def _read_maker(own):
    """A slot ``(x, …) -> x'`` that reads: the enclosing context tags first
    (``own(ctx, original, read, …)`` sees both)."""
    def make(ctx, outer):
        if not _tags(ctx):
            return outer if outer is not None else _identity
        if outer is None:
            def slot(value, *rest):
                return own(ctx, value, value, *rest)
        else:
            def slot(value, *rest):
                return own(ctx, value, outer(value, *rest), *rest)
        return slot
    return make


def _identity(value, *rest):
    return value


def _chain_extended(ctx, outer):
    if not _tags(ctx):
        return outer if outer is not None else _ignore
    if outer is None:
        def slot(source, container):
            extended(ctx, source, container)
    else:
        def slot(source, container):
            extended(ctx, source, container)
            outer(source, container)
    return slot


def _ignore(*operands):
    return None


def _unpacked_read(ctx, original, read, *rest):
    """``unpacked`` for ``original``, whose elements the enclosing contexts
    already tagged in ``read`` (the same object when they had nothing)."""
    record = _record(_cache(ctx), original)
    if record is None or record.items is None or not isinstance(original, (list, tuple)):
        return read
    if type(original).__iter__ not in (list.__iter__, tuple.__iter__):
        return read
    tag = ctx.tag
    parts = _sequence_parts(record, original)
    values = read if read is not original else original
    if len(values) != len(parts):
        return read
    return tuple(value if part is None or part[0] is not _innermost(value)
                 else make_tagged(tag, value, part[1]) for value, part in zip(values, parts))


def _keywords_read(ctx, original, read):
    if type(original) is not dict:
        return read
    record = _record(_cache(ctx), original)
    if record is None or type(record.items) is not dict:
        return read
    return {key: _read_item(ctx.tag, record, key, value) for key, value in read.items()}


def _global_maker(make_own):
    def make(ctx, outer):
        inner = None if outer is None else outer.with_namespace
        own = make_own(ctx, inner)

        def slot(value, name):
            return own(_getframe(1).f_globals, value, name)
        slot.with_namespace = own
        return slot
    return make


def _load_global(ctx, outer):
    tagging = _tags(ctx)

    def load(namespace, value, name):
        if outer is not None:
            value = outer(namespace, value, name)
        if not tagging:
            return value
        record = _record(_cache(ctx), namespace)
        return value if record is None else _read_item(ctx.tag, record, name, value)
    return load


def _store_global(ctx, outer):
    tagging = _tags(ctx)

    def store(namespace, value, name):
        if tagging:
            value, data = _split(value, ctx.tag)
            _note_item(ctx, namespace, name, value, data)
        if outer is not None:
            value = outer(namespace, value, name)
        return value
    return store


def _comparison_maker(compare):
    def make(ctx, outer):
        return compare
    return make


def _is(a, b):
    return _innermost(a) is _innermost(b)


def _is_not(a, b):
    return _innermost(a) is not _innermost(b)


#: Slot name -> maker ``(ctx, outer) -> callable`` (see dispatch.TAGGING_SLOTS).
TAGGING_SLOTS = {
    "built": _chain_maker(record_built, _identity),
    "list_to_tuple": _chain_maker(list_to_tuple, tuple),
    "extended": _chain_extended,
    "list_append": _store_maker(_store_append, _plain_append),
    "set_add": _store_maker(_store_add, _plain_add),
    "map_add": _store_maker(_store_map_add, _plain_map_add),
    "unpacked": _read_maker(_unpacked_read),
    "keywords": _read_maker(_keywords_read),
    "is": _comparison_maker(_is),
    "is_not": _comparison_maker(_is_not),
    "load_global": _global_maker(_load_global),
    "store_global": _global_maker(_store_global),
}


# -- the fallback under tagging ----------------------------------------------------

def propagator(callee):
    """The propagating implementation of primitive ``callee`` —
    ``propagate(ctx, primitive, args, kwargs)`` — or None when the primitive
    only needs its arguments untagged."""
    if not _numpy_known and "numpy" in _modules:
        _know_numpy(_modules["numpy"])
    try:
        return _PROPAGATORS.get(callee)
    except TypeError:                       # an unhashable callee
        return None


_numpy_known = False


def _know_numpy(numpy):
    """numpy's primitives, registered once numpy is imported (cassette does
    not import it)."""
    global _numpy_known
    _numpy_known = True
    _PROPAGATORS.update({numpy.array: _array_of, numpy.asarray: _array_of,
                         numpy.ndarray.__getitem__: _getitem,
                         numpy.ndarray.__setitem__: _setitem,
                         numpy.ndarray.copy: _array_copy, numpy.copy: _array_copy,
                         numpy.ndarray.tolist: _array_tolist})


def fallback(ctx, callee, primitive, args, kwargs):
    """Run primitive ``callee`` — called as ``primitive`` — for a context
    with tagging: metadata propagates through the primitives of
    ``_PROPAGATORS``; every other one sees its arguments untagged.  Then the
    context's ``metadata_loss`` applies (:func:`checked_loss`)."""
    propagate = propagator(callee)
    if propagate is not None:
        out = propagate(ctx, primitive, args, kwargs or {})
    else:
        tag = ctx.tag
        primal_args, primal_kwargs = args, kwargs
        if any(tag_of(a) is tag for a in args):
            primal_args = _untag_all(args, tag)
        if kwargs and any(tag_of(v) is tag for v in kwargs.values()):
            primal_kwargs = {k: _primal(v, tag) for k, v in kwargs.items()}
        out = (primitive(*primal_args, **primal_kwargs) if primal_kwargs
               else primitive(*primal_args))
    if checks_metadata_loss(type(ctx)):
        return checked_loss(ctx, callee, args, kwargs, out)
    return out


def _plain(ctx, primitive, args, kwargs):
    tag = ctx.tag
    return primitive(*_untag_all(args, tag), **{k: _primal(v, tag) for k, v in kwargs.items()})


# -- metadata lost: the context's ``metadata_loss`` (reference §6) ------------------

#: Primitives whose result tells something of their arguments — identity,
#: type, size, hash, order, truth — rather than being a value computed from
#: them: there is no metadata for it to carry.
_SAYS_OF_ARGUMENTS = (id, hash, len, isinstance, issubclass, type, callable, bool,
                      operator.lt, operator.le, operator.eq, operator.ne, operator.gt,
                      operator.ge, operator.contains, operator.truth, operator.not_,
                      operator.is_, operator.is_not, operator.length_hint)


def _carried(value, tag):
    return tag_of(value) is tag and _get(value, _DATA) is not NoMetaData


def _holds_metadata(ctx, value):
    """Whether container ``value`` (a list, tuple or dict, or a numpy
    array) has components — at any depth — carrying metadata of ``ctx``'s:
    a primitive handed ``[x, y]`` is handed ``x``'s and ``y``'s metadata."""
    if not (isinstance(value, (list, tuple, dict)) or _is_array(value)):
        return False
    return _any_metadata(components(value, ctx))


def _any_metadata(found):
    if found is NoMetaMeta:
        return False
    for meta in (found.values() if isinstance(found, dict) else found):
        if meta.data is not NoMetaData or _any_metadata(meta.meta):
            return True
    return False


def _may_carry(ctx_type, value):
    """Whether ``value``, or one of the first elements of a tuple or list
    ``value``, is of a type that ``ctx_type`` lets carry metadata."""
    if allowed_metadata(ctx_type, type(value)) is not None:
        return True
    if isinstance(value, (tuple, list)):
        for i in range(min(len(value), 8)):
            if allowed_metadata(ctx_type, type(value[i])) is not None:
                return True
    return False


def checked_loss(ctx, callee, args, kwargs, out):
    """``out``, the untagged result of primitive ``callee`` on ``args`` and
    ``kwargs`` (as the program passed them) without a handler, after
    ``ctx``'s ``metadata_loss`` ("warn", "raise") has seen it: metadata is
    lost when an argument carried some — itself, or (for a primitive
    without a propagator) components of a list, tuple, dict or array it is
    (:func:`_holds_metadata`) — and ``out`` is
    of a type that may carry it (``metadatatype``) but came back with
    none."""
    tag = ctx.tag
    if (out is None or tag_of(out) is tag or not _may_carry(type(ctx), out)
            or _holds_metadata(ctx, out)):
        return out                      # (None: no value computed from the arguments)
    if not (any(_carried(a, tag) for a in args)
            or (kwargs and any(_carried(v, tag) for v in kwargs.values()))
            # A propagator moves components' metadata itself: what it read
            # without any had none.
            or propagator(callee) is None and (
                any(_holds_metadata(ctx, a) for a in args)
                or (kwargs and any(_holds_metadata(ctx, v) for v in kwargs.values())))):
        return out
    if callables.is_one_of(callee, _SAYS_OF_ARGUMENTS):
        return out
    message = _loss_message(ctx, callee, args, kwargs, out)
    if type(ctx).metadata_loss == "raise":
        raise MetadataLossError(message)
    _warn(message, MetadataLossWarning, stacklevel=2)
    return out


def _loss_message(ctx, callee, args, kwargs, out):
    # Names read from C slots only, as reports do (no program code runs).
    from .cli.describe import callee_name, type_name
    tag = ctx.tag
    ctx_name = type_name(type(ctx))

    def shown(value):
        primal = type_name(type(_primal(value, tag)))
        if tag_of(value) is tag:
            return f"Tagged[{primal}]"
        return f"{primal} holding Tagged" if _holds_metadata(ctx, value) else primal

    shown_args = [shown(a) for a in args] + [f"{k}={shown(v)}" for k, v in (kwargs or {}).items()]
    return (f"{callee_name(callee)}({', '.join(shown_args)}) has no handler under {ctx_name} "
            f"and its {type_name(type(out))} result carries none of its arguments' metadata "
            f"(register an execute handler for it, or set {ctx_name}.metadata_loss = 'drop')")


# -- numpy arrays: one record entry per element index; an array makes a new
# scalar object at every read, so an element still holds what was stored
# when it compares equal to it.

def _is_array(value):
    numpy = _modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.ndarray)


def _element_index(array, key):
    """``key`` as a tuple of non-negative ints naming one element of
    ``array``, or None (a slice, a mask, fewer indices than dimensions …)."""
    indices = key if type(key) is tuple else (key,)
    if len(indices) != array.ndim:
        return None
    normalized = []
    for index, size in zip(indices, array.shape):
        try:
            i = _index(index)
        except TypeError:
            return None
        normalized.append(i + size if i < 0 else i)
    return tuple(normalized)


def _same_element(stored, value):
    try:
        return bool(stored == value) or (stored != stored and value != value)
    except Exception:
        return False


def _read_array_element(tag, record, array, key, value):
    index = _element_index(array, key)
    if index is None or type(record.items) is not dict:
        return value
    part = record.items.get(index)
    if part is not None and _same_element(part[0], value):
        return make_tagged(tag, value, part[1])
    return value


def _store_array_element(ctx, array, key, primal, data):
    index = _element_index(array, key)
    cache = _cache(ctx)
    if index is None:
        return
    if data is not _UNTAGGED:
        record = _new_record(cache, array)
        if type(record.items) is not dict:
            record.items = {}
        record.items[index] = (array[index], data)
    else:
        record = _record(cache, array)
        if record is not None and type(record.items) is dict:
            record.items.pop(index, None)


def _array_positions(array, key):
    """The flat positions of ``array`` that ``array[key]`` selects, shaped as
    the selection (slices, masks, index arrays, rows …); None when ``key``
    selects nothing this way."""
    numpy = _modules["numpy"]
    try:
        return numpy.arange(array.size).reshape(array.shape)[key]
    except Exception:
        return None


def _array_parts(ctx, array):
    """``{flat position: (element, metadata)}`` for the elements of untagged
    ``array`` that still hold what was stored with metadata (empty: none)."""
    record = _record(_cache(ctx), array)
    if record is None or type(record.items) is not dict or not record.items:
        return {}
    ravel = _modules["numpy"].ravel_multi_index
    parts = {}
    for index, part in record.items.items():
        try:
            if _same_element(part[0], array[index]):
                parts[int(ravel(index, array.shape))] = part
        except Exception:
            continue
    return parts


def _element_data(ctx, value, shape):
    """The metadata of each element of ``value`` (what a store writes; a
    tagged value is split already: ``value`` is ``(primal, data)``) as a
    flat list for a selection of ``shape``, ``_UNTAGGED`` where none; None
    when no element has any.  A number's metadata goes to every element;
    a list's, a tuple's (nested) and an untagged array's elements give
    theirs, broadcast as numpy broadcasts the values."""
    numpy = _modules["numpy"]
    primal, data = value
    if data is not _UNTAGGED:
        if _is_array(primal) or data is NoMetaData:
            return None             # an array's own metadata is the context's to split
        return [data] * int(numpy.prod(shape, dtype=numpy.int64))
    if _is_array(primal):
        parts = _array_parts(ctx, primal)
        if not parts:
            return None
        source = numpy.full(primal.size, _UNTAGGED, dtype=object)
        for position, part in parts.items():
            source[position] = part[1]
        source = source.reshape(primal.shape)
    elif isinstance(primal, (list, tuple)):
        try:
            source = numpy.full(numpy.shape(primal), _UNTAGGED, dtype=object)
        except Exception:
            return None
        parts_of = {}
        for index in numpy.ndindex(source.shape):
            source[index] = _nested_data(ctx, primal, index, parts_of)
        if all(d is _UNTAGGED for d in source.flat):
            return None
    else:
        return None
    try:
        return list(numpy.broadcast_to(source, shape).ravel())
    except ValueError:
        return None


def _nested_data(ctx, value, index, parts_of):
    """The metadata of the number at ``index`` of nested lists and tuples
    ``value`` (their records' parts, memoized in ``parts_of`` by list),
    or ``_UNTAGGED``."""
    for i in index[:-1]:
        value = value[i]
    if not isinstance(value, (list, tuple)):
        return _UNTAGGED
    parts = parts_of.get(id(value))
    if parts is None:
        record = _record(_cache(ctx), value)
        parts = (_sequence_parts(record, value, check=True)
                 if record is not None and record.items is not None else ())
        parts_of[id(value)] = parts
    i = index[-1]
    if i < len(parts) and parts[i] is not None:
        return parts[i][1]
    return _split(value[i], ctx.tag)[1] if i < len(value) else _UNTAGGED


def _may_hold_metadata(cache, value):
    """Whether stored ``(primal, data)`` may give elements metadata: tagged,
    or a container (or a container's row) with a record."""
    primal, data = value
    if data is not _UNTAGGED:
        return True
    if _is_array(primal) or isinstance(primal, (list, tuple)):
        if _record(cache, primal) is not None:
            return True
        return isinstance(primal, (list, tuple)) and any(
            isinstance(row, (list, tuple)) and _record(cache, row) is not None
            for row in primal)
    return False


def _store_array_selection(ctx, array, key, value):
    """After ``array[key] = value`` with a key that is not one element's:
    each element written keeps the metadata of what was written there."""
    cache = _cache(ctx)
    record = _record(cache, array)
    if (record is None or not record.items) and not _may_hold_metadata(cache, value):
        return                      # the common case: nothing to keep or forget
    positions = _array_positions(array, key)
    if positions is None:
        return
    sources = _element_data(ctx, value, positions.shape)
    if sources is None and (record is None or not record.items):
        return
    if record is None:
        record = _new_record(cache, array)
    if type(record.items) is not dict:
        record.items = {}
    items = record.items
    unravel = _modules["numpy"].unravel_index
    for i, position in enumerate(positions.ravel()):
        index = tuple(int(j) for j in unravel(position, array.shape))
        data = _UNTAGGED if sources is None else sources[i]
        if data is _UNTAGGED:
            items.pop(index, None)
        else:
            items[index] = (array[index], data)


def _with_array_parts(ctx, source, key, out):
    """``out``, an array made of ``source[key]``'s elements, given those
    elements' metadata."""
    parts = _array_parts(ctx, source)
    if not parts or not _is_array(out):
        return out
    positions = _array_positions(source, key)
    if positions is None or positions.shape != out.shape:
        return out
    unravel = _modules["numpy"].unravel_index
    items = None
    for i, position in enumerate(positions.ravel()):
        part = parts.get(int(position))
        if part is None:
            continue
        index = tuple(int(j) for j in unravel(i, out.shape))
        if _same_element(part[0], out[index]):
            if items is None:
                record = _new_record(_cache(ctx), out)
                items = record.items = {}
            items[index] = (out[index], part[1])
    return out


def _array_copy(ctx, primitive, args, kwargs):
    """``a.copy()``, ``numpy.copy(a)``: the copy's elements keep theirs."""
    tag = ctx.tag
    out = primitive(*_untag_all(args, tag), **{k: _primal(v, tag) for k, v in kwargs.items()})
    source = _primal(args[0], tag) if args else None
    if _is_array(source) and _is_array(out) and out.shape == source.shape and out is not source:
        _with_array_parts(ctx, source, ..., out)
    return out


def _array_tolist(ctx, primitive, args, kwargs):
    """``a.tolist()``: the lists' numbers keep their elements' metadata."""
    tag = ctx.tag
    source = _primal(args[0], tag) if args else None
    out = primitive(*_untag_all(args, tag), **{k: _primal(v, tag) for k, v in kwargs.items()})
    if not _is_array(source) or not isinstance(out, list):
        return out
    parts = _array_parts(ctx, source)
    if not parts:
        return out
    ravel = _modules["numpy"].ravel_multi_index

    def record_rows(rows, prefix):
        if source.ndim - len(prefix) > 1:
            for i, row in enumerate(rows):
                record_rows(row, prefix + (i,))
            return
        recorded = []
        for i, element in enumerate(rows):
            part = parts.get(int(ravel(prefix + (i,), source.shape)))
            recorded.append(None if part is None else (element, part[1]))
        if any(p is not None for p in recorded):
            record_parts(ctx, rows, recorded)

    record_rows(out, ())
    return out


def _getitem(ctx, primitive, args, kwargs):
    if len(args) != 2 or kwargs:
        return _plain(ctx, primitive, args, kwargs)
    tag = ctx.tag
    container, key = _primal(args[0], tag), _primal(args[1], tag)
    out = primitive(container, key)
    cache = _cache(ctx)
    record = _record(cache, container)
    if record is None or record.items is None:
        return out
    if _is_array(container):
        if _element_index(container, key) is None:
            return _with_array_parts(ctx, container, key, out)
        return _read_array_element(tag, record, container, key, out)
    if isinstance(container, (list, tuple)):
        if type(key) is slice:
            return _with_parts(cache, out, _derived_parts(record, container, out))
        return _read_element(tag, record, container, key, out)
    return _read_item(tag, record, key, out)


def _setitem(ctx, primitive, args, kwargs):
    if len(args) != 3 or kwargs:
        return _plain(ctx, primitive, args, kwargs)
    tag = ctx.tag
    container, key = _primal(args[0], tag), _primal(args[1], tag)
    primal, data = _split(args[2], tag)
    cache = _cache(ctx)
    record = _record(cache, container)
    if _is_array(container):
        out = primitive(container, key, primal)
        if _element_index(container, key) is None:
            _store_array_selection(ctx, container, key, (primal, data))
        else:
            _store_array_element(ctx, container, key, primal, data)
        return out
    if isinstance(container, list) and type(key) is slice:
        pool = None if record is None else _sequence_parts(record, container)
        out = primitive(container, key, primal)
        sources = _record(cache, primal)
        if pool is not None or sources is not None:
            target = record if record is not None else _new_record(cache, container)
            parts = list(pool) if pool else []
            if sources is not None and sources.items is not None and isinstance(
                    primal, (list, tuple)):
                parts += [p for p in _sequence_parts(sources, primal) if p is not None]
            target.items = parts
            _rematched(target, container)
        return out
    out = primitive(container, key, primal)
    if isinstance(container, (list, tuple)):
        if data is _UNTAGGED and record is None:
            return out
        if record is None:
            record = _new_record(cache, container)
        parts = _sequence_parts(record, container) if record.items is not None else None
        if parts is None:
            parts = record.items = [None] * len(container)
        i = _index(key)
        if i < 0:
            i += len(parts)
        parts[i] = None if data is _UNTAGGED else (_innermost(primal), data)
        return out
    _note_item(ctx, container, key, primal, data)
    return out


def _delitem(ctx, primitive, args, kwargs):
    if len(args) != 2 or kwargs:
        return _plain(ctx, primitive, args, kwargs)
    tag = ctx.tag
    container, key = _primal(args[0], tag), _primal(args[1], tag)
    record = _record(_cache(ctx), container)
    if record is not None and isinstance(container, list) and record.items is not None:
        parts = _sequence_parts(record, container)
        out = primitive(container, key)
        del parts[key]
        return out
    out = primitive(container, key)
    if record is not None and type(record.items) is dict:
        try:
            record.items.pop(key, None)
        except TypeError:
            pass
    return out


def _getattr(ctx, primitive, args, kwargs):
    if not 2 <= len(args) <= 3 or kwargs:
        return _plain(ctx, primitive, args, kwargs)
    tag = ctx.tag
    if tag_of(args[0]) is tag and type(args[1]) is str:
        # ``x.m`` of a tagged value, m a method of its primal class: bound
        # to the tagged value, so that calling it is the operation on m
        # with the tagged value first (see cassette.engine.call_shim).
        shim = getattr(type(args[0]), args[1], None)
        if type(shim) is _FunctionType and "_cassette_method" in shim.__dict__:
            return _MethodType(shim, args[0])
    args = _untag_all(args, tag)
    out = primitive(*args)
    record = _record(_cache(ctx), args[0])
    if record is None:
        return out
    if isinstance(args[0], tuple) and record.items is not None and type(args[1]) is str:
        index = _field_index(type(args[0]), args[1])
        if index is not None:           # a named tuple's field: its element
            return _read_element(tag, record, args[0], index, out)
    if not record.attrs:
        return out
    part = record.attrs.get(args[1]) if type(args[1]) is str else None
    if part is not None and part[0] is _innermost(out):
        return make_tagged(tag, out, part[1])
    return out


_TupleGetter = type(collections.namedtuple("_Probe", "field").field)


def _field_index(cls, name):
    """The element index a named tuple class reads for attribute ``name``
    (its ``_tuplegetter``), or None."""
    descriptor = callables.lookup_on_type(cls, name)
    if type(descriptor) is not _TupleGetter:
        return None
    try:
        return descriptor.__reduce__()[1][0]
    except Exception:
        return None


def _setattr(ctx, primitive, args, kwargs):
    if len(args) != 3 or kwargs:
        return _plain(ctx, primitive, args, kwargs)
    tag = ctx.tag
    obj, name = _primal(args[0], tag), _primal(args[1], tag)
    primal, data = _split(args[2], tag)
    out = primitive(obj, name, primal)
    cache = _cache(ctx)
    if data is not _UNTAGGED:
        try:
            record = _new_record(cache, obj)
        except TypeError:
            return out
        if record.attrs is None:
            record.attrs = {}
        record.attrs[name] = (_innermost(primal), data)
    else:
        record = _record(cache, obj)
        if record is not None and record.attrs:
            record.attrs.pop(name, None)
    return out


def _delattr(ctx, primitive, args, kwargs):
    out = _plain(ctx, primitive, args, kwargs)
    record = _record(_cache(ctx), _primal(args[0], ctx.tag)) if args else None
    if record is not None and record.attrs and len(args) > 1:
        record.attrs.pop(_primal(args[1], ctx.tag), None)
    return out


def _list_append(ctx, primitive, args, kwargs):
    if len(args) != 2 or kwargs or not isinstance(_primal(args[0], ctx.tag), list):
        return _plain(ctx, primitive, args, kwargs)

    def put(value, container):
        return primitive(container, value)
    return _store_append(ctx, put, args[1], _primal(args[0], ctx.tag))


def _list_insert(ctx, primitive, args, kwargs):
    if len(args) != 3 or kwargs:
        return _plain(ctx, primitive, args, kwargs)
    tag = ctx.tag
    container, index = _primal(args[0], tag), _primal(args[1], tag)
    primal, data = _split(args[2], tag)
    record = _record(_cache(ctx), container)
    if record is None and data is _UNTAGGED:
        return primitive(container, index, primal)
    if record is None:
        record = _new_record(_cache(ctx), container)
    parts = _sequence_parts(record, container)
    out = primitive(container, index, primal)
    parts.insert(index, None if data is _UNTAGGED else (_innermost(primal), data))
    return out


def _list_pop(ctx, primitive, args, kwargs):
    if not 1 <= len(args) <= 2 or kwargs:
        return _plain(ctx, primitive, args, kwargs)
    tag = ctx.tag
    args = _untag_all(args, tag)
    container = args[0]
    record = _record(_cache(ctx), container)
    if record is None or record.items is None or not isinstance(container, list):
        return primitive(*args)
    parts = _sequence_parts(record, container)
    out = primitive(*args)
    part = parts.pop(args[1] if len(args) > 1 else -1)
    if part is not None and part[0] is _innermost(out):
        return make_tagged(tag, out, part[1])
    return out


def _resyncing(ctx, primitive, args, kwargs):
    """A primitive that may move a list's elements (sort, reverse, remove,
    extend, ``+=`` …): parts follow by identity; new elements coming from a
    recorded source keep their metadata."""
    tag = ctx.tag
    if primitive is _iadd and args and type(_primal(args[0], tag)) is tuple:
        return _concatenating(ctx, primitive, args, kwargs)   # t += u makes a new tuple
    args = _untag_all(args, tag)
    kwargs = {k: _primal(v, tag) for k, v in kwargs.items()}
    cache = _cache(ctx)
    container = args[0] if args else None
    record = None if container is None else _record(cache, container)
    sources = [r for r in (_record(cache, a) for a in args[1:]) if r is not None]
    if record is None and not sources:
        return primitive(*args, **kwargs) if kwargs else primitive(*args)
    pool = list(_sequence_parts(record, container)) if (
        record is not None and isinstance(container, list) and record.items is not None) else []
    for source, value in ((r, a) for a in args[1:] for r in [_record(cache, a)] if r):
        if isinstance(value, (list, tuple)) and source.items is not None:
            pool += _sequence_parts(source, value)
    out = primitive(*args, **kwargs) if kwargs else primitive(*args)
    if isinstance(container, list) and pool:
        target = record if record is not None else _new_record(cache, container)
        target.items = [p for p in pool if p is not None]
        _rematched(target, container)
    return out


def _copying(ctx, primitive, args, kwargs):
    """A primitive making a new container from its first argument (``list``,
    ``tuple``, ``sorted``, ``list.copy``, slicing …): elements keep their
    metadata by identity; tagged values a generator produced become
    primal."""
    tag = ctx.tag
    args = _untag_all(args, tag)
    kwargs = {k: _primal(v, tag) for k, v in kwargs.items()}
    out = primitive(*args, **kwargs) if kwargs else primitive(*args)
    if type(out) not in (list, tuple, dict, set, frozenset):
        return out
    cache = _cache(ctx)
    out = record_built(ctx, out) if type(out) is not tuple else out
    if type(out) is set or type(out) is frozenset:
        _match_set(cache, out, args)
        return out
    source = args[0] if args else None
    record = None if source is None else _record(cache, source)
    if isinstance(out, (list, tuple)) and isinstance(source, (set, frozenset)):
        # sorted(s), list(s), tuple(s): each element keeps its metadata.
        pool = _parts_by_identity(cache, source)
        if pool and out is not source:
            parts = []
            for element in out:
                part = pool.get(id(_innermost(element)))
                parts.append(part if part is not None and part[0] is _innermost(element)
                             else None)
            _new_record(cache, out).items = parts
        return out
    if isinstance(out, (list, tuple)) and len(args) > 1:
        # list + list: elements of either source keep their metadata.
        pool = []
        for arg in args:
            arg_record = _record(cache, arg)
            if arg_record is not None and arg_record.items is not None and isinstance(
                    arg, (list, tuple)):
                pool += _sequence_parts(arg_record, arg)
        if pool and out is not source:
            target = _new_record(cache, out)
            target.items = [p for p in pool if p is not None] + (
                list(target.items) if type(target.items) is list else [])
            _rematched(target, out)
        return out
    if record is None or record.items is None:
        return out
    if isinstance(out, (list, tuple)) and isinstance(source, (list, tuple)):
        parts = _derived_parts(record, source, out)
        if parts is not None and out is not source:
            target = _new_record(cache, out)
            old = target.items if type(target.items) is list else None
            if old is not None and len(old) == len(out):
                parts = [p if p is not None else o for p, o in zip(parts, old)]
            target.items = parts
    elif type(out) is dict and type(record.items) is dict and out is not source:
        _copy_items(cache, record, out)
    return out


def _tuple_new(ctx, primitive, args, kwargs):
    """``tuple.__new__(cls, iterable)``, as a named tuple or another tuple
    subclass is made from a list or tuple: each element keeps its
    metadata (matched by identity)."""
    tag = ctx.tag
    args = _untag_all(args, tag)
    out = primitive(*args, **{k: _primal(v, tag) for k, v in kwargs.items()})
    if len(args) == 2 and isinstance(out, tuple) and isinstance(args[1], (list, tuple)):
        cache = _cache(ctx)
        record = _record(cache, args[1])
        if record is not None and record.items is not None and out is not args[1]:
            parts = _derived_parts(record, args[1], out)
            if parts is not None:
                _new_record(cache, out).items = parts
    return out


def _array_of(ctx, primitive, args, kwargs):
    """``numpy.array(x)``/``numpy.asarray(x)`` of a list or tuple (nested
    too) whose numbers carry metadata, or a copy of an array whose elements
    do: the array's elements carry it."""
    tag = ctx.tag
    cache = _cache(ctx)
    source = _primal(args[0], tag) if args else None
    elements = None
    if isinstance(source, (list, tuple)):
        record = _record(cache, source)
        if record is not None and record.items is not None:
            elements = [_UNTAGGED if p is None else p[1]
                        for p in _sequence_parts(record, source, check=True)]
        elif source and tag_of(source[0]) is not None:
            # Tagged values themselves, which only a list made outside the
            # run holds (a run's lists hold primal values).
            elements = [_split(v, tag)[1] for v in source]
            source = type(source)(_primal(v, tag) for v in source)
    out = primitive(source, *_untag_all(args[1:], tag),
                    **{k: _primal(v, tag) for k, v in kwargs.items()})
    if elements is not None and _is_array(out) and out.ndim == 1 and len(out) == len(elements):
        for i, data in enumerate(elements):
            if data is not _UNTAGGED:
                _store_array_element(ctx, out, i, out[i], data)
    elif _is_array(out) and out is not source and (
            _is_array(source) or isinstance(source, (list, tuple))):
        # A copy of an array, or an array of nested lists: each element
        # keeps the metadata of the element it was made from.
        if _is_array(source) and source.shape == out.shape:
            _with_array_parts(ctx, source, ..., out)
        elif out.ndim > 1 and isinstance(source[0], (list, tuple)):
            _store_array_selection(ctx, out, ..., (source, _UNTAGGED))
    return out


def _dict_get(ctx, primitive, args, kwargs):
    if not 2 <= len(args) <= 3 or kwargs:
        return _plain(ctx, primitive, args, kwargs)
    tag = ctx.tag
    args = _untag_all(args, tag)
    out = primitive(*args)
    record = _record(_cache(ctx), args[0])
    if record is None:
        return out
    return _read_item(tag, record, args[1], out)


def _dict_pop(ctx, primitive, args, kwargs):
    out = _dict_get(ctx, primitive, args, kwargs)
    record = _record(_cache(ctx), _primal(args[0], ctx.tag)) if args else None
    if record is not None and type(record.items) is dict and len(args) > 1:
        try:
            record.items.pop(_primal(args[1], ctx.tag), None)
        except TypeError:
            pass
    return out


def _dict_setdefault(ctx, primitive, args, kwargs):
    if not 2 <= len(args) <= 3 or kwargs:
        return _plain(ctx, primitive, args, kwargs)
    tag = ctx.tag
    container, key = _primal(args[0], tag), _primal(args[1], tag)
    default, data = _split(args[2], tag) if len(args) > 2 else (None, _UNTAGGED)
    had = key in container
    out = primitive(container, key, default)
    if not had:
        _note_item(ctx, container, key, default, data)
    record = _record(_cache(ctx), container)
    return out if record is None else _read_item(tag, record, key, out)


def _dict_update(ctx, primitive, args, kwargs):
    tag = ctx.tag
    plain_args = _untag_all(args, tag)
    container = plain_args[0] if plain_args else None
    out = primitive(*plain_args, **{k: _primal(v, tag) for k, v in kwargs.items()})
    if isinstance(container, dict):
        for key, value in kwargs.items():
            primal, data = _split(value, tag)
            _note_item(ctx, container, key, primal, data)
        if len(plain_args) > 1:
            extended(ctx, plain_args[1], container)
    return out


def _set_add(ctx, primitive, args, kwargs):
    """``s.add(x)``: ``x``'s metadata is kept if the set stores ``x`` (it
    keeps an equal element it already holds, and that one's metadata)."""
    if len(args) != 2 or kwargs or not isinstance(_primal(args[0], ctx.tag), set):
        return _plain(ctx, primitive, args, kwargs)
    container = _primal(args[0], ctx.tag)
    primal, data = _split(args[1], ctx.tag)
    before = len(container)
    out = primitive(container, primal)
    if len(container) != before:
        _note_set_element(_cache(ctx), container, _innermost(primal), data)
    return out


def _set_pop(ctx, primitive, args, kwargs):
    """``s.pop()``: the element taken out, with its metadata."""
    if len(args) != 1 or kwargs:
        return _plain(ctx, primitive, args, kwargs)
    container = _primal(args[0], ctx.tag)
    out = primitive(container)
    record = _record(_cache(ctx), container)
    if record is not None and type(record.items) is dict:
        element = _innermost(out)        # (an enclosing context may have tagged it)
        part = record.items.pop(id(element), None)
        if part is not None and part[0] is element:
            return make_tagged(ctx.tag, out, part[1])
    return out


def _set_changing(ctx, primitive, args, kwargs):
    """A set method or operator changing its first argument in place
    (``update``, ``|=``, ``discard``, ``clear`` …): each element the set
    then holds keeps the metadata recorded for that very object, in the
    set's record or in a source's (a list, tuple or set argument); tagged
    values an iterable produced become primal."""
    called = _untagged_set_call(ctx.tag, primitive, args, kwargs)
    if called is None:
        return _plain(ctx, primitive, args, kwargs)
    out, args = called
    container = args[0] if args else None
    if type(container) is set:
        record_built(ctx, container)
        _match_set(_cache(ctx), container, args[1:])
    return out


def _set_combining(ctx, primitive, args, kwargs):
    """A set method or operator making a new set from its arguments
    (``|``, ``&``, ``-``, ``^``, ``union`` …): as :func:`_set_changing`,
    for the new set."""
    called = _untagged_set_call(ctx.tag, primitive, args, kwargs)
    if called is None:
        return _plain(ctx, primitive, args, kwargs)
    out, args = called
    if type(out) is set or type(out) is frozenset:
        out = record_built(ctx, out)
        _match_set(_cache(ctx), out, args)
    return out


def _untagged_set_call(tag, primitive, args, kwargs):
    """``(result, primal arguments)`` of ``primitive`` called with every
    argument primal, when one of its first two arguments is a set; None
    (nothing called) otherwise."""
    if not _involves_a_set(args, tag):
        return None
    args = _untag_all(args, tag)
    kwargs = {k: _primal(v, tag) for k, v in kwargs.items()}
    return (primitive(*args, **kwargs) if kwargs else primitive(*args)), args


def _set_changing_iterables(ctx, primitive, args, kwargs):
    return _set_changing(ctx, primitive, args, kwargs)


def _set_combining_iterables(ctx, primitive, args, kwargs):
    return _set_combining(ctx, primitive, args, kwargs)


# Set methods taking iterables run even with nothing tagged and nothing
# recorded: an iterable (a generator) may produce tagged values, which must
# not stay in the program's set.
_set_changing_iterables.always = _set_combining_iterables.always = True


def _involves_a_set(args, tag):
    return any(isinstance(_primal(a, tag), (set, frozenset)) for a in args[:2])


class _Iterator:
    """``iter(x)`` for a container with recorded metadata: the container's
    own iterator, each value tagged as a read of that component would be."""

    __slots__ = ("_iterator", "_read", "_index", "__weakref__")

    def __init__(self, iterator, read):
        self._iterator = iterator
        self._read = read
        self._index = 0

    def __iter__(self):
        return self

    def __next__(self):
        value = next(self._iterator)
        index = self._index
        self._index = index + 1
        return self._read(index, value)

    def __length_hint__(self):
        return _length_hint(self._iterator)

    def __reduce__(self):
        return self._iterator.__reduce__()


def _iter(ctx, primitive, args, kwargs):
    if len(args) != 1 or kwargs:
        return _plain(ctx, primitive, args, kwargs)
    tag = ctx.tag
    container = _primal(args[0], tag)
    iterator = primitive(container)
    record = _record(_cache(ctx), container)
    if record is None or record.items is None:
        return iterator
    kind = type(container)
    if kind is list or kind is tuple:
        def read(index, value):
            return _read_element(tag, record, container, index, value)
    elif kind is set or kind is frozenset:
        def read(index, value):
            return _read_set_element(tag, record, value)
    elif _is_array(container) and container.ndim == 1:
        def read(index, value):
            return _read_array_element(tag, record, container, index, value)
    else:
        return iterator          # a dict iterates over its (primal) keys
    return _Iterator(iterator, read)


def _tagged_iterator(ctx, iterable):
    """An iterator over ``iterable`` giving its elements tagged as reads
    would, or ``iterable`` itself when nothing is recorded for it."""
    record = _record(_cache(ctx), iterable)
    if record is None or record.items is None:
        return iterable
    return _iter(ctx, iter, (iterable,), {})


def _iterating(ctx, primitive, args, kwargs):
    """``zip``, ``enumerate``, ``map`` …: the iterables they consume give
    tagged elements, so what they produce carries the metadata."""
    tag = ctx.tag
    args = tuple(_tagged_iterator(ctx, _primal(a, tag)) for a in args)
    return primitive(*args, **{k: _primal(v, tag) for k, v in kwargs.items()})


def _reversed(ctx, primitive, args, kwargs):
    if len(args) != 1 or kwargs:
        return _plain(ctx, primitive, args, kwargs)
    tag = ctx.tag
    container = _primal(args[0], tag)
    iterator = primitive(container)
    record = _record(_cache(ctx), container)
    if record is None or record.items is None or not isinstance(container, (list, tuple)):
        return iterator
    last = len(container) - 1

    def read(index, value):
        return _read_element(tag, record, container, last - index, value)
    return _Iterator(iterator, read)


def _dict_values(ctx, primitive, args, kwargs):
    """``d.values()`` and ``d.items()`` keep the view's type; iterating
    over the view (``iter`` of it) reads the values as ``d[key]`` would."""
    out = _plain(ctx, primitive, args, kwargs)
    container = _primal(args[0], ctx.tag) if args else None
    record = None if container is None else _record(_cache(ctx), container)
    if record is not None and type(record.items) is dict:
        _new_record(_cache(ctx), out).items = ("view", container)
    return out


def _iter_view(ctx, primitive, args, kwargs):
    if len(args) != 1 or kwargs:
        return _iter(ctx, primitive, args, kwargs)
    view = _primal(args[0], ctx.tag)
    record = _record(_cache(ctx), view)
    if record is None or type(record.items) is not tuple:
        return _iter(ctx, primitive, args, kwargs)
    container = record.items[1]
    iterator = primitive(view)
    tag = ctx.tag
    source = _record(_cache(ctx), container)
    if source is None:
        return iterator
    if type(view) is type({}.items()):
        def read(index, pair):
            key, value = pair
            return (key, _read_item(tag, source, key, value))
    else:
        keys = iter(container)

        def read(index, value):
            # (The keys run out with the values: both iterate one dict.)
            return _read_item(tag, source, next(keys, None), value)
    return _Iterator(iterator, read)


def _conversion(ctx, primitive, args, kwargs):
    """``float(x)``, ``int(x)``, ``complex(x)`` of a tagged value carry its
    metadata, converted as :func:`cassette.tag` would for the result's type
    (dropped when that type allows none)."""
    tag = ctx.tag
    if len(args) != 1 or kwargs or tag_of(args[0]) is not tag:
        return _plain(ctx, primitive, args, kwargs)
    primal, data = _split(args[0], tag)
    out = primitive(primal)
    if data is NoMetaData:
        return out
    allowed = allowed_metadata(type(ctx), type(_innermost(out)))
    if not isinstance(allowed, type):
        return out
    if not isinstance(_innermost(data), allowed):
        try:
            data = allowed(_innermost(data))
        except BaseException:
            return out
    return make_tagged(tag, out, data)


def _concatenating(ctx, primitive, args, kwargs):
    """``a + b``: for lists and tuples, a copy of both (numbers, the common
    case, reach here only with a tagged or recorded operand)."""
    return _copying(ctx, primitive, args, kwargs)


# A propagator marked ``always`` runs even when no argument is tagged and
# none has a record: what it makes may hold tagged values a generator gave.
_copying.always = True
# Nested lists hold their numbers' metadata a level down: not in a record
# of their own.
_array_of.always = True
_iterating.always = True

_PROPAGATORS = {
    operator.getitem: _getitem, operator.setitem: _setitem, operator.delitem: _delitem,
    getattr: _getattr, setattr: _setattr, object.__getattribute__: _getattr,
    object.__setattr__: _setattr, delattr: _delattr, object.__delattr__: _delattr,
    list.__getitem__: _getitem, list.__setitem__: _setitem, list.__delitem__: _delitem,
    tuple.__getitem__: _getitem, dict.__getitem__: _getitem, dict.__setitem__: _setitem,
    dict.__delitem__: _delitem,
    list.append: _list_append, list.insert: _list_insert, list.pop: _list_pop,
    list.extend: _resyncing, list.sort: _resyncing, list.reverse: _resyncing,
    list.remove: _resyncing, list.__iadd__: _resyncing, list.__imul__: _resyncing,
    operator.iadd: _resyncing, list.clear: _resyncing,
    list: _copying, tuple: _copying, sorted: _copying, list.copy: _copying,
    tuple.__new__: _tuple_new,
    dict: _copying, set: _copying, frozenset: _copying, dict.copy: _copying,
    set.copy: _copying, operator.add: _concatenating, reversed: _reversed,
    zip: _iterating, enumerate: _iterating,
    dict.get: _dict_get, dict.pop: _dict_pop, dict.setdefault: _dict_setdefault,
    dict.update: _dict_update, dict.values: _dict_values, dict.items: _dict_values,
    iter: _iter_view,
    float: _conversion, int: _conversion, complex: _conversion,
    set.add: _set_add, set.pop: _set_pop, frozenset.copy: _copying,
    operator.or_: _set_combining, operator.and_: _set_combining,
    operator.sub: _set_combining, operator.xor: _set_combining,
    operator.ior: _set_changing, operator.iand: _set_changing,
    operator.isub: _set_changing, operator.ixor: _set_changing,
}
for _name in ("union", "intersection", "difference", "symmetric_difference",
              "__or__", "__and__", "__sub__", "__xor__", "__ror__", "__rand__", "__rsub__",
              "__rxor__"):
    _PROPAGATORS[getattr(set, _name)] = _PROPAGATORS[getattr(frozenset, _name)] = _set_combining
for _name in ("update", "intersection_update", "difference_update",
              "symmetric_difference_update", "discard", "remove", "clear", "__ior__",
              "__iand__", "__isub__", "__ixor__"):
    _PROPAGATORS[getattr(set, _name)] = _set_changing
for _name in ("union", "intersection", "difference", "symmetric_difference"):
    _PROPAGATORS[getattr(set, _name)] = _PROPAGATORS[getattr(frozenset, _name)] = (
        _set_combining_iterables)
for _name in ("update", "intersection_update", "difference_update",
              "symmetric_difference_update"):
    _PROPAGATORS[getattr(set, _name)] = _set_changing_iterables

dispatch.install_propagation(fallback=fallback, propagator=propagator, slots=TAGGING_SLOTS,
                             record_parts=record_parts)
tagging.install_components(components)
