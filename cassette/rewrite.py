"""The interception rewrite: turn a code object into one whose operations
are routed through a runtime.

The rewrite is done once per (code object, set of intercepted site kinds) and
shared by every context that intercepts the same kinds; the result is a
*template*: code whose constants include :class:`Slot` placeholders.  A
runtime binds a template by replacing each placeholder with its own callable
for that slot (:meth:`Template.bind`), which is cheap.

What a slot is called with, per site kind (the runtimes implement these):

=================  ==========================================  ===============
slot               called with                                  returns
=================  ==========================================  ===============
``resolve``        the callable about to be called              what to call
``method``         ``obj, name`` (a call of ``obj.name(…)``)     M, to call as
                                                                 ``M(obj, …)``
``split``          a bound method (3.12 ``super().m(…)``)        ``(self, M)``
operation names    the operands in stack order (see below)      the result
``for``            an iterator                                  value or
                                                                 :data:`EXHAUSTED`
``for_ended``      the iterator, after ``for`` returned          whether the
                   :data:`EXHAUSTED`                             loop ends
``with``           the context manager                          ``(value, exit)``
``async_with``     the asynchronous context manager             ``(awaitable,
                                                                 exit)``
=================  ==========================================  ===============

Operands in stack order: ``contains``/``not_contains`` get ``(item,
container)``, ``setitem`` gets ``(value, obj, index)``, ``setattr`` gets
``(value, obj, name)``, ``getslice`` gets ``(obj, start, stop)`` and
``setslice`` gets ``(value, obj, start, stop)``; every other operation gets
its operands in source order.
"""

import collections
import enum
import sys

from bytecode import CellVar, CompilerFlags, Instr, Label, TryBegin

from . import diskcache, locks
from .markers import EXHAUSTED, RUNTIME, Slot
from .operations import OPERATIONS, Intercept
from .passes import pass_failures, run_passes
from .versions import LAYER
from .versions.common import GIVEN_ITERATOR, Site, StackTag
from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_Enum = enum.Enum
_getrecursionlimit = sys.getrecursionlimit
_setrecursionlimit = sys.setrecursionlimit


#: A constant a pass loads to get the running context (``cassette.ir.CONTEXT``).
CONTEXT = Slot("context")


class NoOverdub:
    """A constant a pass loads as the callee of a call that must not be
    intercepted (``cassette.ir.nooverdub(callee)``).  Binding replaces it by
    the runtime's ``nooverdub`` slot applied to ``callee``."""

    __slots__ = ("callee",)

    def __init__(self, callee):
        self.callee = callee

    def __repr__(self):
        return f"cassette.ir.nooverdub({self.callee!r})"

    def __eq__(self, other):
        return type(other) is NoOverdub and other.callee is self.callee

    def __hash__(self):
        return hash((NoOverdub, id(self.callee)))

_STRUCTURAL_ROWS = {
    "call": Intercept.CALLS, "call_kw": Intercept.CALLS,
    "call_ex": Intercept.CALLS, "method": Intercept.CALLS,
    "super_method": Intercept.CALLS,
    "not_contains": Intercept.COMPARISONS,
    "getslice": Intercept.SUBSCRIPTS, "setslice": Intercept.SUBSCRIPTS,
    "for": Intercept.ITERATION, "with": Intercept.WITH,
    "async_with": Intercept.WITH,
    "caught": Intercept.CALLS,
}


#: Site kinds rewritten only for a tagging context (cassette.propagation):
#: each calls the runtime slot of the same name.
TAGGING_KINDS = frozenset({
    "built", "list_append", "set_add", "map_add", "extended", "unpacked",
    "list_to_tuple", "is", "is_not", "load_global", "store_global",
})


#: The site kind of the loads of attributes whose reading calls a function
#: the owner holds (:attr:`~cassette.versions.common.Layer.
#: annotation_attributes`: ``__annotations__`` calls ``__annotate__``, PEP
#: 649) that no context intercepts, where the core routes: the load stays,
#: after a call of the ``annotations`` slot that routes that function.
#: (Not a row of reference §3.1: no hook sees these loads.)
ANNOTATIONS_LOAD = "annotations_load"

#: Not a site kind: among the kinds of :func:`template_for`, it asks for an
#: ``__init__``'s code as a *constructor* (:func:`constructor_template`).
CONSTRUCTOR = "constructor"

_NOT_CONSTRUCTORS = (CompilerFlags.GENERATOR | CompilerFlags.COROUTINE
                     | CompilerFlags.ASYNC_GENERATOR | CompilerFlags.ITERABLE_COROUTINE)


def row_of(kind):
    """The reference §3.1 row a site kind belongs to."""
    row = _STRUCTURAL_ROWS.get(kind)
    return row if row is not None else OPERATIONS[kind].row


def kinds_for(rows):
    """The site kinds to rewrite for an :class:`Intercept` value."""
    all_kinds = set(_STRUCTURAL_ROWS) | set(OPERATIONS) - {"next"}
    return frozenset(k for k in all_kinds if row_of(k) & (rows | Intercept.CALLS))


# -- stack simulation --------------------------------------------------------

def _permute(tags, instr):
    """The stack after SWAP/COPY, or None for other instructions."""
    name = instr.name
    if name == "SWAP":
        tags = list(tags)
        i = instr.arg
        tags[-1], tags[-i] = tags[-i], tags[-1]
        return tags
    if name == "COPY":
        return tags + [tags[-instr.arg]]
    return None


_effects = {}


def _effect(instr, jump):
    """``(values popped, values pushed, tags of the pushed values or None)``
    for ``instr`` (cached: all three depend on the opcode, an integer
    argument or the leading flag of a tuple argument — the NULL/method bit —
    and the direction)."""
    arg = instr.arg
    kind = type(arg)
    if kind is tuple:
        arg = arg[0] if arg and type(arg[0]) is bool else None
    elif kind is not int:
        # An enum argument (LOAD_SPECIAL's method) counts; bytecode's UNSET,
        # an int too, does not.
        arg = arg if isinstance(arg, _Enum) else None
    key = (instr.name, arg, jump)
    effect = _effects.get(key)
    if effect is None:
        pre, _post = instr.pre_and_post_stack_effect(jump=jump)
        net = instr.stack_effect(jump=jump)
        # ``pre`` alone undercounts instructions that pop below what they
        # leave in place (MAP_ADD 1 reports pre -1, post -1 for its key and
        # value): never push a negative count.
        pops = max(-pre, -net, 0)
        produced = LAYER.producer_tags(instr)
        effect = _effects[key] = (pops, net + pops, tuple(produced) if produced else None)
    return effect


def _apply(tags, instr, jump):
    permuted = _permute(tags, instr)
    if permuted is not None:
        return permuted
    pops, pushes, produced = _effect(instr, jump)
    result = tags[: len(tags) - pops] if pops else list(tags)
    if pushes:
        result += [StackTag.OTHER] * pushes
    if produced and len(produced) <= len(result):
        # The tags describe the top of the stack after ``instr``.  Overlay
        # them rather than trusting ``pushes``: the bytecode package reports
        # instructions that replace their operand by two values
        # (LOAD_METHOD, BEFORE_WITH) as pushing one without popping.
        result[len(result) - len(produced):] = produced
    return result


def _apply_producers(producers, instr, jump):
    permuted = _permute(producers, instr)
    if permuted is not None:
        return permuted
    pops, pushes, _produced = _effect(instr, jump)
    kept = producers[: len(producers) - pops] if pops else list(producers)
    return kept + [instr] * pushes


def stack_producers(elements):
    """Like :func:`stack_tags`, but each stack value is the instruction
    that pushed it (``None`` when unknown, e.g. in exception handlers)."""
    return stack_tags(elements, _apply_producers, None)


def stack_tags(elements, apply=_apply, unknown=StackTag.OTHER):
    """For each element of an abstract instruction list, the tags of the
    stack before it (``None`` where the element is unreachable or not an
    instruction)."""
    before = [None] * len(elements)
    at_label = {}
    unseeded = {}       # handler label -> a TryBegin met where the stack was unknown
    for _ in range(8):
        # Another pass is needed only when a label already passed (with no
        # stack known there) gets its stack later: a backward jump or a
        # handler seeded from unknown code.
        grew = False
        passed = set()
        state = []
        for index, element in enumerate(elements):
            if isinstance(element, Label):
                passed.add(element)
                known = at_label.get(element)
                if state is None and known is not None:
                    state = list(known)
                elif state is not None and known is None:
                    at_label[element] = list(state)
                continue
            if isinstance(element, TryBegin):
                if element.target not in at_label:
                    if state is None:
                        unseeded[element.target] = element
                    else:
                        # A handler starts with the values below the
                        # protected range (a call's NULL and callable may be
                        # among them), then lasti and the exception.
                        at_label[element.target] = _handler_entry(state, element, unknown)
                        grew = grew or element.target in passed
                continue
            if not isinstance(element, Instr) or state is None:
                continue
            before[index] = state
            if element.has_jump():
                target = element.arg
                if target not in at_label:
                    at_label[target] = apply(state, element, True)
                    grew = grew or target in passed
            if element.is_final():
                state = None
            else:
                state = apply(state, element, False)
        if not grew:
            pending = [t for t in unseeded if t not in at_label]
            if not pending:
                break
            for target in pending:      # reached only through unknown stacks
                at_label[target] = _handler_entry(None, unseeded[target], unknown)
    return before


def _handler_entry(state, try_begin, unknown):
    """The stack tags at the entry of ``try_begin``'s handler, given the
    tags where the protected range begins (None: unknown)."""
    depth = try_begin.stack_depth
    below = state[:depth] if state is not None and len(state) >= depth else [unknown] * depth
    return list(below) + [unknown] * (int(try_begin.push_lasti) + 1)


# -- emission ----------------------------------------------------------------

def following(elements, index, count=None):
    """The real instructions directly after ``index`` (stopping at the first
    label or pseudo-instruction), at most ``count`` (by default, as many as
    the layer's site classification reads)."""
    if count is None:
        count = LAYER.site_lookahead
    out = []
    for element in elements[index + 1: index + 1 + count]:
        if not isinstance(element, Instr):
            break
        out.append(element)
    return out


_OPERAND_COUNT = {
    "neg": 1, "pos": 1, "invert": 1, "not": 1, "iter": 1,
    "setitem": 3, "delitem": 2, "getslice": 3, "setslice": 4,
    "getattr": 2, "setattr": 3, "delattr": 2,
}


def operand_count(kind):
    """How many stack values the slot of operation site ``kind`` receives."""
    return _OPERAND_COUNT.get(kind, 2)
_STATEMENTS = frozenset({"setitem", "delitem", "setslice", "setattr", "delattr"})


def _emit_site(site, instr, tags, out, tagging=False):
    """Append the replacement of ``site`` to ``out``; return False to keep the
    original instructions instead.  ``tagging``: the propagation sites are
    rewritten too."""
    loc = instr.location
    kind = site.kind
    call = LAYER.call_constant

    if kind in TAGGING_KINDS:
        return _emit_tagging_site(site, instr, out)
    if kind == "call_ex" and tagging:
        # Star-arguments carry their elements' metadata into the call.
        if LAYER.call_ex_has_keywords(site, tags):
            out += call(Slot("keywords"), 1, loc)
        out += LAYER.resolve_at_depth(Slot("unpacked"), LAYER.call_ex_arguments_depth(site), loc)
    if kind in ("call", "call_kw", "call_ex"):
        depth = LAYER.resolution_depth(site, tags)
        if depth is not None:
            out += LAYER.resolve_at_depth(Slot("resolve"), depth, loc)
        return False  # the call instructions themselves follow unchanged

    if kind == "method":
        # [obj] -> [M, obj], M = the lookup of the sites of this name applied
        # to obj.  A local receiver is loaded again rather than shuffled.
        lookup = Slot(("method", site.detail))
        receiver = out[-1] if out else None
        if type(receiver) is Instr and receiver.name == "LOAD_FAST":
            out[-1] = Instr("LOAD_CONST", lookup, location=receiver.location)
            out += LAYER.call_constant_on(receiver, loc)
            out.append(Instr("LOAD_FAST", receiver.arg, location=loc))
        else:
            out.append(Instr("COPY", 1, location=loc))
            out.append(Instr("LOAD_CONST", lookup, location=loc))
            out.append(Instr("SWAP", 2, location=loc))
            out += LAYER.call_opcodes(0, loc)
            out.append(Instr("SWAP", 2, location=loc))
        return True
    if kind == "super_method":
        out.append(LAYER.super_attribute_load(site.detail, loc))
        out += call(Slot("split"), 1, loc)
        out.append(Instr("UNPACK_SEQUENCE", 2, location=loc))
        return True
    if kind == "for":
        # [iterator] -> [iterator, value], or out of the loop.  The step's
        # EXHAUSTED is only a hint: an iterator may yield that very object
        # (a program can reach it), so on that branch alone the runtime
        # says whether the step found the iterator exhausted.
        proceed = Label()
        out.append(Instr("COPY", LAYER.iterator_depth, location=loc))
        out += call(Slot("for"), 1, loc)
        out.append(Instr("COPY", 1, location=loc))
        out.append(Instr("LOAD_CONST", EXHAUSTED, location=loc))
        out.append(Instr("IS_OP", 0, location=loc))
        out.append(LAYER.jump_forward_if_false(proceed, loc))
        out.append(Instr("COPY", LAYER.iterator_depth + 1, location=loc))
        out += call(Slot("for_ended"), 1, loc)
        out.append(LAYER.jump_forward_if_false(proceed, loc))
        out += LAYER.for_exhausted(site.detail, loc)
        out.append(proceed)
        return True
    if kind == "caught":
        # An exception handler's entry: the program may look at the caught
        # exception's traceback, so the library's entries leave it here.
        out.append(instr)
        out.append(Instr("COPY", 1, location=loc))
        out += call(Slot("caught"), 1, loc)
        out.append(Instr("POP_TOP", location=loc))
        return True
    if (kind == "getattr" or kind == ANNOTATIONS_LOAD) and site.detail in LAYER.annotation_attributes:
        # Reading it calls the owner's __annotate__ from C: route that first.
        out.append(Instr("COPY", 1, location=loc))
        out += call(Slot("annotations"), 1, loc)
        out.append(Instr("POP_TOP", location=loc))
    if kind == ANNOTATIONS_LOAD:
        out.append(instr)
        return True
    if kind == "with":
        out += LAYER.enter_with(Slot(kind), loc, Slot("with_entry"))
        return True
    if kind == "async_with":
        out += LAYER.enter_with(Slot(kind), loc)
        return True
    if kind == "iter" and site.detail == GIVEN_ITERATOR:
        out += call(Slot("iter_taken"), 1, loc)
        out += LAYER.iterator_made(loc)
        return True
    if kind in ("getattr", "setattr", "delattr"):
        out.append(Instr("LOAD_CONST", site.detail, location=loc))
    out += call(Slot(kind), operand_count(kind), loc)
    if kind == "iter":
        out += LAYER.iterator_made(loc)
    if site.detail == "cast":
        out += LAYER.to_bool(loc)
    if kind in _STATEMENTS:
        out.append(Instr("POP_TOP", location=loc))
    return True


def _emit_tagging_site(site, instr, out):
    """The propagation sites (see :data:`TAGGING_KINDS`); returns True."""
    loc = instr.location
    kind = site.kind
    call = LAYER.call_constant
    slot = Slot(kind)
    if kind == "built":                 # the display just built
        out.append(instr)
        out += call(slot, 1, loc)
    elif kind in ("list_append", "set_add", "map_add"):
        # [container … value] -> slot(value, container): the slot stores.
        operands = 2 if kind == "map_add" else 1
        out.append(Instr("COPY", instr.arg + operands, location=loc))
        out += call(slot, operands + 1, loc)
        out.append(Instr("POP_TOP", location=loc))
    elif kind == "extended":
        # The instruction runs on a copy of its source, then
        # slot(source, container) sees both.
        out.append(Instr("COPY", 1, location=loc))
        out.append(Instr(instr.name, instr.arg + 1, location=loc))
        out.append(Instr("COPY", instr.arg + 1, location=loc))
        out += call(slot, 2, loc)
        out.append(Instr("POP_TOP", location=loc))
    elif kind == "unpacked":            # the sequence about to be unpacked
        out += call(slot, 1, loc)
        out.append(instr)
    elif kind in ("is", "is_not", "list_to_tuple"):
        out += call(slot, 1 if kind == "list_to_tuple" else 2, loc)
    elif kind == "load_global":
        name = instr.arg[1] if type(instr.arg) is tuple else instr.arg
        out.append(instr)
        value_below_null = type(instr.arg) is tuple and instr.arg[0] and not (
            LAYER.null_below_callable)
        if value_below_null:
            out.append(Instr("SWAP", 2, location=loc))
        out.append(Instr("LOAD_CONST", name, location=loc))
        out += call(slot, 2, loc)
        if value_below_null:
            out.append(Instr("SWAP", 2, location=loc))
    elif kind == "store_global":
        out.append(Instr("LOAD_CONST", instr.arg, location=loc))
        out += call(slot, 2, loc)
        out.append(instr)
    else:
        raise AssertionError(f"unknown propagation site {kind!r}")
    return True


_CALL_KINDS = frozenset({"call", "call_kw", "call_ex"})


def _untouched_sites(elements, tags, sites, kinds):
    """The ids of the instructions the rewrite must leave as they are.

    * A ``getattr`` site whose value is the callable of a call: ``obj.m(*args)``
      loads ``obj.m`` as a plain attribute where ``obj.m(a)`` uses a method
      load; leaving the load alone makes both spellings the one operation
      ``type(obj).m, (obj, …)``.
    * A call whose callable is the constant :class:`NoOverdub` a pass loaded:
      the call is not intercepted.
    """
    check_loads = "getattr" in kinds
    if not check_loads and not any(
            type(e) is Instr and type(e.arg) is NoOverdub for e in elements):
        return ()
    producers = None
    found = set()
    for index, site in enumerate(sites):
        if site is None or site.kind not in _CALL_KINDS:
            continue
        element = elements[index]
        depth = LAYER.resolution_depth(site, tags[index])
        if depth is None:
            continue
        if producers is None:
            producers = stack_producers(elements)
        state = producers[index]
        if state is None or len(state) < depth:
            continue
        producer = state[-depth]
        if producer is None:
            continue
        if type(producer.arg) is NoOverdub:
            found.add(id(element))
            continue
        load = LAYER.site(producer, []) if check_loads else None
        if load is not None and load.kind == "getattr":
            found.add(id(producer))
    return found


def _generator_expression_calls(elements, sites):
    """Where the layer passes a generator expression's function its iterable
    (3.15: the function's first instruction makes the iterator), the ids of
    those calls: the caller makes the iterator first, through the ``iter``
    slot, so hooks see ``iter(xs)`` and then the call of the function with
    the iterator, as on the releases where the caller calls ``iter``
    (``iter_given``).  The function's prologue (``iter_taken``) keeps an
    iterator so given and makes one of any other value, as its plain
    prologue does: code taken from ``gi_code`` and called with an iterable
    runs as it would plainly."""
    producers = None
    position = None
    found = set()
    for index, site in enumerate(sites):
        if site is None or site.kind != "call" or site.detail != 0:
            continue
        if producers is None:
            producers = stack_producers(elements)
            position = {id(e): i for i, e in enumerate(elements)}
        state = producers[index]
        if state is None or len(state) < 2 or state[-2] is None:
            continue
        at = position.get(id(state[-2]))
        while at is not None and at > 0 and _is_named(elements[at], "SET_FUNCTION_ATTRIBUTE"):
            at -= 1
        if at is None or at < 1 or not _is_named(elements[at], "MAKE_FUNCTION"):
            continue
        load = elements[at - 1]
        if (isinstance(load, Instr) and load.name == "LOAD_CONST"
                and LAYER.is_generator_expression(load.arg)):
            found.add(id(elements[index]))
    return found


def _is_named(element, name):
    return isinstance(element, Instr) and element.name == name


def rewrite_bytecode(bytecode, kinds):
    """Rewrite an abstract :class:`bytecode.Bytecode` in place so that sites
    of the given kinds call runtime slots.  Returns the deepest the value
    stack gets at a rewritten site (the rest of the code keeps the depths it
    had)."""
    elements = list(bytecode)
    tags = stack_tags(elements)
    reads_following = LAYER.sites_read_following
    sites = [LAYER.site(element, following(elements, index)
                        if element.name in reads_following else ())
             if tags[index] is not None and isinstance(element, Instr) else None
             for index, element in enumerate(elements)]
    untouched = _untouched_sites(elements, tags, sites, kinds)
    if ANNOTATIONS_LOAD in kinds:
        # The annotation loads that stay loads: not intercepted, or left
        # alone as the callable of a call.
        intercepted = "getattr" in kinds
        annotations = LAYER.annotation_attributes
        sites = [Site(ANNOTATIONS_LOAD, detail=site.detail)
                 if site is not None and site.kind == "getattr" and site.detail in annotations
                 and (not intercepted or id(elements[index]) in untouched) else site
                 for index, site in enumerate(sites)]
    tagging = "unpacked" in kinds
    iterating_calls = (_generator_expression_calls(elements, sites)
                       if "iter" in kinds and LAYER.generator_expressions_take_iterable
                       else ())
    out = []
    deepest = 0
    index = 0
    while index < len(elements):
        element = elements[index]
        site = sites[index]
        if (site is None or site.kind not in kinds
                or id(element) in untouched and site.kind != ANNOTATIONS_LOAD):
            out.append(element)
            index += 1
            continue
        start = len(out)
        if id(element) in iterating_calls:
            out += LAYER.call_constant(Slot("iter_given"), 1, element.location)
        replaced = _emit_site(site, element, tags[index], out, tagging)
        if not replaced:
            out.extend(elements[index: index + site.span])
        deepest = max(deepest, len(tags[index]) + _peak(out, start))
        index += site.span
    if tagging:
        deepest = max(deepest, _record_variadic_arguments(bytecode, out))
    # ``out`` holds only elements taken from ``bytecode`` or made here: no
    # need for the validation of ``Bytecode.extend``.
    list.clear(bytecode)
    list.extend(bytecode, out)
    return deepest


def _record_variadic_arguments(bytecode, out):
    """For a tagging context: at the start of a function taking ``*args`` or
    ``**kwargs``, the tuple and dict the interpreter built from the call's
    arguments (tagged values among them) go through the ``built`` slot, as
    a display the program built would.  Returns the stack depth used."""
    flags = bytecode.flags
    names = []
    index = bytecode.argcount + bytecode.kwonlyargcount
    if flags & CompilerFlags.VARARGS:
        names.append(bytecode.argnames[index])
        index += 1
    if flags & CompilerFlags.VARKEYWORDS:
        names.append(bytecode.argnames[index])
    if not names:
        return 0
    for position, element in enumerate(out):
        if type(element) is Instr and element.name == "RESUME" and element.arg == 0:
            break
    else:
        return 0
    loc = element.location
    code = []
    for name in names:
        cell = name in bytecode.cellvars
        variable = CellVar(name) if cell else name
        code.append(Instr("LOAD_DEREF" if cell else "LOAD_FAST", variable, location=loc))
        code += LAYER.call_constant(Slot("built"), 1, loc)
        code.append(Instr("STORE_DEREF" if cell else "STORE_FAST", variable, location=loc))
    out[position + 1:position + 1] = code
    return _peak(code, 0)


def _peak(instrs, start):
    """How far above its starting depth the stack gets while ``instrs[start:]``
    run straight through."""
    depth = peak = 0
    for instr in instrs[start:]:
        if type(instr) is Instr:
            depth += instr.stack_effect(jump=False)
            if depth > peak:
                peak = depth
    return peak


class Template:
    """Rewritten code with placeholders, ready to bind to a runtime: each
    :class:`Slot` constant becomes ``slot_values(name)`` and each
    :class:`NoOverdub` constant ``slot_values("nooverdub")(callee)``.

    ``attribute_loads``: where the version layer's property loads skip
    routing, ``(code unit, name)`` of the code's attribute loads, which the
    core pins when ``name`` is a routed property's
    (:attr:`~cassette.versions.common.Layer.attribute_load_pin`); else
    ``()``."""

    __slots__ = ("code", "slot_indices", "attribute_loads")

    def __init__(self, code):
        self.code = code
        self.slot_indices = tuple(
            i for i, c in enumerate(code.co_consts) if type(c) is Slot or type(c) is NoOverdub
        )
        self.attribute_loads = (LAYER.plain_attribute_loads(code)
                                if LAYER.property_loads_skip_routing else ())

    def bind(self, slot_values):
        """Code with every placeholder replaced (see the class docstring)."""
        if not self.slot_indices:
            return self.code
        consts = list(self.code.co_consts)
        for i in self.slot_indices:
            const = consts[i]
            if type(const) is Slot:
                consts[i] = slot_values(const.name)
            else:
                consts[i] = slot_values("nooverdub")(const.callee)
        return self.code.replace(co_consts=tuple(consts))


#: Most templates kept in memory; the least recently used go first.
TEMPLATES_MAX = 16384

# Keyed by the code's identity (equal code objects from different files must
# not share a template: their file names differ), the kinds and the passes.
# The value keeps the code alive so its id cannot be reused.
_templates = collections.OrderedDict()


def template_for(code, kinds, passes=(), function=None):
    """The (cached) template of ``code`` with sites of ``kinds`` rewritten,
    after the ``passes`` — a tuple of ``(context class, Pass)``, applied in
    order — transformed it (``function`` is what a pass is told it runs on).
    Raises :class:`cassette.PassError` when a pass fails."""
    key = (id(code), kinds, passes)
    entry = _templates.get(key)
    if entry is not None:
        _templates.move_to_end(key)
        return entry[1]
    # Rewriting is cassette's work, not the program's: it must not spend
    # the program's recursion budget (a program running near its limit,
    # as CPython's recursion tests do, would fail in the middle of it).
    lend_frames(_REWRITE_FRAMES)
    try:
        rewritten = diskcache.load(code, kinds, passes)
        if rewritten is None:
            try:
                rewritten = _rewritten_code(code, kinds, passes, function)
                if rewritten is not code:
                    diskcache.store(code, kinds, passes, rewritten)
            finally:
                diskcache.release(code, kinds, passes)   # the claim a miss makes
    finally:
        lend_frames(-_REWRITE_FRAMES)
    template = Template(rewritten)
    _templates[key] = (code, template)
    while len(_templates) > TEMPLATES_MAX:
        _templates.popitem(last=False)
    return template


#: Frames the rewriting of a code object may use beyond the program's limit.
_REWRITE_FRAMES = 200

#: Held while cassette changes the recursion limit (for frames of its own):
#: threads doing so at the same time must not lose one another's change,
#: which would leave the program another limit.
recursion_limit_lock = locks.lock()


def lend_frames(count):
    """Raise the recursion limit by ``count`` (lower it, when negative)."""
    with recursion_limit_lock:
        _setrecursionlimit(_getrecursionlimit() + count)


def constructor_template(code, kinds):
    """The template of ``code``, a Python ``__init__``'s, rewritten for
    ``kinds`` (no passes) as a *constructor*: called with the new object
    as its first argument, as ``__init__`` is, it returns that object where
    ``__init__`` returns None, and where ``__init__`` returns anything else
    it raises the ``TypeError`` ``type.__call__`` raises (the runtime's
    ``initialized`` slot).  A call site then makes an object as the
    interpreter's own inlined instantiation does: the object allocated,
    the constructor called as a method of it, in the caller's evaluation
    loop.

    None when the code cannot serve: a generator's or coroutine's, one
    without a positional first argument, or one that may rebind that
    argument (a store or deletion of it, or a cell a nested function could
    rebind) — the object returned must be the one ``__init__`` was given."""
    if code.co_flags & _NOT_CONSTRUCTORS or code.co_argcount < 1:
        return None
    first = code.co_varnames[0]
    if first in code.co_cellvars or LAYER.rebinds_local(code, first):
        return None
    template = template_for(code, kinds | {CONSTRUCTOR})
    return template if template.code is not code else None


def _rewritten_code(code, kinds, passes, function):
    try:
        # The exception table's stack depths seed the stack simulation of
        # handlers (3.12's inlined comprehensions keep values below them).
        bytecode = LAYER.bytecode_of(code)
    except (RecursionError, MemoryError):
        raise           # transient: the code may well be rewritable later
    except Exception as error:
        # The bytecode package cannot represent every code object (3.13: a
        # comprehension variable that is a cell while the same name is a
        # free variable of the function).  Such code runs as it is: an
        # escape, recorded, rather than a program that fails.
        _note_unrewritable(code, error)
        return code
    shielded = _shield_program_markers(code, bytecode)
    if passes:
        bytecode = run_passes(passes, function, code, bytecode)
        with pass_failures(passes, function, code):
            rewrite_bytecode(bytecode, kinds)
            rewritten = assemble(bytecode)
    else:
        # The rewrite knows how deep the stack gets; telling the assembler
        # saves it a control-flow analysis (about half its cost).
        deepest = rewrite_bytecode(bytecode, kinds)
        stacksize = max(code.co_stacksize, deepest)
        if CONSTRUCTOR in kinds:
            LAYER.return_first_argument(bytecode, code.co_varnames[0], Slot("initialized"))
            stacksize = None        # the assembler computes it
        if shielded:
            stacksize = None
        rewritten = assemble(bytecode, stacksize, depths_known=True)
    return rewritten.replace(co_consts=rewritten.co_consts + (RUNTIME,))


def _shield_program_markers(code, bytecode):
    """Binding replaces every :class:`Slot` and :class:`NoOverdub` constant
    of a template, but the program can reach those objects and make code
    that loads one.  Such a load of the program's (in ``bytecode``, made
    from ``code``, before any pass) becomes a load from a one-element tuple,
    which binding leaves alone.  Returns whether there was one."""
    if not any(type(const) is Slot or type(const) is NoOverdub for const in code.co_consts):
        return False
    shielded = []
    for element in bytecode:
        if (type(element) is Instr and element.name in ("LOAD_CONST", "RETURN_CONST")
                and (type(element.arg) is Slot or type(element.arg) is NoOverdub)):
            loc = element.location
            shielded.append(Instr("LOAD_CONST", (element.arg,), location=loc))
            shielded.append(Instr("UNPACK_SEQUENCE", 1, location=loc))
            if element.name == "RETURN_CONST":
                shielded.append(Instr("RETURN_VALUE", location=loc))
        else:
            shielded.append(element)
    list.clear(bytecode)
    list.extend(bytecode, shielded)
    return True


#: Code objects cassette could not rewrite and runs un-rewritten:
#: ``"file:line qualname"`` -> the error (the most recent 100).
UNREWRITABLE = {}


def _note_unrewritable(code, error):
    if len(UNREWRITABLE) >= 100:
        del UNREWRITABLE[next(iter(UNREWRITABLE))]
    UNREWRITABLE[f"{code.co_filename}:{code.co_firstlineno} {code.co_qualname}"] = (
        f"{type(error).__name__}: {error}")


def assemble(bytecode, stacksize=None, depths_known=False):
    """``bytecode.to_code()``, keeping the exception table's stack depths;
    ``stacksize``, when given, is a bound known to hold; ``depths_known``
    says every ``TryBegin`` has its depth (no pass made new ones).

    Every rewrite is stack-neutral where a protected range begins, so the
    original depths stay right; the ``bytecode`` package's recomputation of
    them is not (it gives a ``finally: raise`` inside an ``except`` block
    too deep a handler, and unwinding then frees values it does not own).
    Depths are recomputed only when some block has none (new blocks)."""
    recompute = not depths_known and any(
        type(e) is TryBegin and type(e.stack_depth) is not int for e in bytecode)
    if recompute:
        stacksize = None
    code = bytecode.to_code(stacksize=stacksize, compute_exception_stack_depths=recompute)
    return LAYER.fit_location_table(code)
