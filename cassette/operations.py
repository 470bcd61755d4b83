"""The operations of reference §3.1: what a hook sees for each piece of syntax.

This module is the vocabulary shared by the bytecode layer (which finds the
sites of these operations in code) and the runtimes (which route them through
a context).  It knows nothing about bytecode or hooks.

Every operation has a *name* (a short string such as ``"add"``), the *callee*
that hooks see (``operator.add``), the *row* of reference §3.1 it belongs to (an
:class:`Intercept` flag), and an *implementation*: the plain Python semantics
that run when no handler replaces it.
"""

import enum
import operator


class Intercept(enum.Flag):
    """Which rows of reference §3.1 a context class intercepts.

    Set ``intercept`` on a context class to narrow it; the default is
    ``Intercept.ALL``.  Calls and ``with`` blocks are always intercepted,
    because recursion into callees happens there (a ``with`` block calls
    ``__enter__``/``__exit__``).  Narrowing only makes overdubbing cheaper:
    whatever is intercepted behaves exactly as specified.
    """

    CALLS = enum.auto()
    ARITHMETIC = enum.auto()      # + - * / … unary - + ~, in-place forms
    COMPARISONS = enum.auto()     # < <= == != > >=, in, not
    SUBSCRIPTS = enum.auto()      # a[i], a[i] = v, del a[i]
    ATTRIBUTES = enum.auto()      # obj.x, obj.x = v, del obj.x
    ITERATION = enum.auto()       # for: iter(it), next(iterator)
    WITH = enum.auto()            # with cm: __enter__ / __exit__
    ALL = CALLS | ARITHMETIC | COMPARISONS | SUBSCRIPTS | ATTRIBUTES | ITERATION | WITH


class Operation:
    """One kind of operation: its name, the callee hooks see, its row and
    its plain implementation (called with the same arguments hooks see)."""

    __slots__ = ("name", "callee", "row", "implementation")

    def __init__(self, name, callee, row, implementation=None):
        self.name = name
        self.callee = callee
        self.row = row
        self.implementation = callee if implementation is None else implementation

    def __repr__(self):
        return f"<operation {self.name}: {getattr(self.callee, '__name__', self.callee)}>"


_BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "truediv": operator.truediv, "floordiv": operator.floordiv,
    "mod": operator.mod, "pow": operator.pow, "matmul": operator.matmul,
    "lshift": operator.lshift, "rshift": operator.rshift,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor,
}
_INPLACE = {
    "iadd": operator.iadd, "isub": operator.isub, "imul": operator.imul,
    "itruediv": operator.itruediv, "ifloordiv": operator.ifloordiv,
    "imod": operator.imod, "ipow": operator.ipow, "imatmul": operator.imatmul,
    "ilshift": operator.ilshift, "irshift": operator.irshift,
    "iand": operator.iand, "ior": operator.ior, "ixor": operator.ixor,
}
_UNARY = {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert}
_COMPARE = {
    "lt": operator.lt, "le": operator.le, "eq": operator.eq,
    "ne": operator.ne, "gt": operator.gt, "ge": operator.ge,
}

OPERATIONS = {}


def _define(name, callee, row, implementation=None):
    OPERATIONS[name] = Operation(name, callee, row, implementation)


for _name, _fn in {**_BINARY, **_INPLACE, **_UNARY}.items():
    _define(_name, _fn, Intercept.ARITHMETIC)
for _name, _fn in _COMPARE.items():
    _define(_name, _fn, Intercept.COMPARISONS)
_define("contains", operator.contains, Intercept.COMPARISONS)
_define("not", operator.not_, Intercept.COMPARISONS)
_define("getitem", operator.getitem, Intercept.SUBSCRIPTS)
_define("setitem", operator.setitem, Intercept.SUBSCRIPTS)
_define("delitem", operator.delitem, Intercept.SUBSCRIPTS)
_define("getattr", getattr, Intercept.ATTRIBUTES)
_define("setattr", setattr, Intercept.ATTRIBUTES)
_define("delattr", delattr, Intercept.ATTRIBUTES)
_define("iter", iter, Intercept.ITERATION)
_define("next", next, Intercept.ITERATION)

#: The special methods through which the interpreter runs each operation on
#: operands of a class that defines them (reflected forms included):
#: operation name -> (names looked up on the first operand's class, names
#: looked up on the second's).  Attribute operations are decided separately
#: (descriptors of the attribute matter too).
SPECIAL_METHODS = {}
for _name in _BINARY:
    _names = (f"__{_name}__", f"__r{_name}__")
    SPECIAL_METHODS[_name] = (_names, _names)
for _name in _INPLACE:
    _names = (f"__{_name[1:]}__", f"__r{_name[1:]}__")
    SPECIAL_METHODS[_name] = ((f"__{_name}__",) + _names, _names)
for _name in _UNARY:
    SPECIAL_METHODS[_name] = ((f"__{_name}__",), ())
_REFLECTED = {"lt": "gt", "le": "ge", "eq": "eq", "ne": "ne", "gt": "lt", "ge": "le"}
for _name in _COMPARE:
    _names = (f"__{_name}__", f"__{_REFLECTED[_name]}__")
    SPECIAL_METHODS[_name] = (_names, _names)
SPECIAL_METHODS.update({
    "contains": (("__contains__", "__iter__", "__getitem__"), ("__eq__",)),
    "not": (("__bool__", "__len__"), ()),
    "getitem": (("__getitem__", "__class_getitem__"), ("__index__", "__hash__", "__eq__")),
    "setitem": (("__setitem__",), ("__index__", "__hash__", "__eq__")),
    "delitem": (("__delitem__",), ("__index__", "__hash__", "__eq__")),
    "iter": (("__iter__", "__getitem__"), ()),
    "next": (("__next__",), ()),
})

#: The slots the rewriter emits that are methods of a runtime, not
#: operations: slot name -> method name.  Both runtimes serve them.
STRUCTURAL_SLOTS = {
    "resolve": "resolve", "split": "split",
    "for": "next_step", "for_ended": "loop_ended",
    "iter_given": "give_iterator", "iter_taken": "take_iterator",
    "with": "enter", "with_entry": "entry_of", "async_with": "async_enter",
    "caught": "caught", "nooverdub": "nooverdub", "annotations": "route_annotate",
    "initialized": "initialized",
}

#: Operation sites whose operands the stack holds in another order than the
#: operation's arguments: site kind -> (operation hooks see, arrangement,
#: negate the result).  The arrangements, stack order -> arguments:
#: ``"swap"`` (item, container) -> (container, item);
#: ``"value_last"`` (value, obj, key) -> (obj, key, value);
#: ``"slice"`` (obj, start, stop) -> (obj, slice(start, stop));
#: ``"slice_value_last"`` (value, obj, start, stop) -> (obj, slice(start, stop), value).
ARRANGED_SITES = {
    "contains": ("contains", "swap", False),
    "not_contains": ("contains", "swap", True),
    "setitem": ("setitem", "value_last", False),
    "setattr": ("setattr", "value_last", False),
    "getslice": ("getitem", "slice", False),
    "setslice": ("setitem", "slice_value_last", False),
}

BINARY_NAMES = tuple(_BINARY)
INPLACE_NAMES = tuple(_INPLACE)
COMPARE_NAMES = tuple(_COMPARE)

# Callees of each row, for deciding at rewrite time whether a context's
# handlers could ever match a site of that row.  `with` sites report the
# __enter__/__exit__ found on the manager's class, so any handler with a
# specific callee might match them; the rewriter treats WITH as "could match"
# whenever the class has any handler at all.
ROW_CALLEES = {}
for _op in OPERATIONS.values():
    ROW_CALLEES.setdefault(_op.row, []).append(_op.callee)
