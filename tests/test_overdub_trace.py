"""The hook trace of a program exercising every row of reference §3.1 is the same
on CPython 3.11, 3.12 and 3.13, and is the one the table prescribes.

The trace is recorded as ``(callee name, argument reprs)`` with reprs that do
not depend on addresses, and compared with a list written out below.
Comprehensions deserve a note: 3.11 compiles a list/set/dict comprehension
to a nested function that it calls, 3.12+ inline it (PEP 709); the call of
that function is not an operation, so the traces agree.  A generator
expression is a function call in every version and appears as one.
"""

import types

import cassette
from overdub_support import name_of


class Vec:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm1(self):
        return abs(self.x) + abs(self.y)

    def __repr__(self):
        return f"Vec({self.__dict__.get('x')}, {self.__dict__.get('y')})"


class Box:
    def __enter__(self):
        return "in"

    def __exit__(self, et, ev, tb):
        return et is KeyError

    def __repr__(self):
        return "Box()"


def kw(a, k=0):
    return a - k


def program(xs):
    v = Vec(1, -2)
    n = v.norm1()
    total = 0
    for x in xs:
        total += x * 2
    out = [x + 1 for x in xs if x > 1]
    evens = {x % 2 for x in xs}
    negs = {x: -x for x in xs}
    g = sum(x for x in xs)
    t = (kw(5, k=2), kw(*[4], **{"k": 1}))
    lst = [3, 1, 2]
    lst.append(0)
    lst[0] = lst[1] - lst[2]
    del lst[3]
    part = lst[0:2]
    lst[1:2] = [7]
    v.x = 10
    del v.y
    flag = not n
    inside = 2 in lst
    unary = (-n, ~n, +n)
    cmp = (n < 4, n <= 4, n == 4, n != 4, n > 4, n >= 4)
    with Box() as b:
        raise KeyError("k")
    return (n, total, out, evens, negs, g, t, lst, part, flag, inside, unary, cmp, b)


def show(value):
    """A repr of a hook argument that is the same on every version."""
    if isinstance(value, (types.GeneratorType,)):
        return f"<generator {value.__qualname__}>"
    if isinstance(value, types.TracebackType):
        return "<traceback>"
    if isinstance(value, BaseException):
        return f"{type(value).__name__}{value.args!r}"
    if isinstance(value, type):
        return value.__qualname__
    if type(value).__name__.endswith("iterator"):
        return f"<{type(value).__name__}>"
    if isinstance(value, (list, tuple, set, dict, int, str, slice, Vec, Box)) or value is None:
        return repr(value)
    return f"<{type(value).__name__}>"


class TraceRecorder(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        entry = (name_of(f), tuple(show(a) for a in args))
        if kwargs:
            entry += (tuple(sorted((k, show(v)) for k, v in kwargs.items())),)
        self.metadata.append(entry)


EXPECTED = [
    # v = Vec(1, -2)
    ("Vec", ("1", "-2")),
    ("object.__new__", ("Vec", "1", "-2")),
    ("Vec.__init__", ("Vec(None, None)", "1", "-2")),
    ("setattr", ("Vec(None, None)", "'x'", "1")),
    ("setattr", ("Vec(1, None)", "'y'", "-2")),
    # n = v.norm1()
    ("Vec.norm1", ("Vec(1, -2)",)),
    ("getattr", ("Vec(1, -2)", "'x'")),
    ("abs", ("1",)),
    ("getattr", ("Vec(1, -2)", "'y'")),
    ("abs", ("-2",)),
    ("operator.add", ("1", "2")),
    # for x in xs: total += x * 2
    ("iter", ("[1, 2]",)),
    ("next", ("<list_iterator>",)),
    ("operator.mul", ("1", "2")),
    ("operator.iadd", ("0", "2")),
    ("next", ("<list_iterator>",)),
    ("operator.mul", ("2", "2")),
    ("operator.iadd", ("2", "4")),
    ("next", ("<list_iterator>",)),
    # out = [x + 1 for x in xs if x > 1]
    ("iter", ("[1, 2]",)),
    ("next", ("<list_iterator>",)),
    ("operator.gt", ("1", "1")),
    ("next", ("<list_iterator>",)),
    ("operator.gt", ("2", "1")),
    ("operator.add", ("2", "1")),
    ("next", ("<list_iterator>",)),
    # evens = {x % 2 for x in xs}
    ("iter", ("[1, 2]",)),
    ("next", ("<list_iterator>",)),
    ("operator.mod", ("1", "2")),
    ("next", ("<list_iterator>",)),
    ("operator.mod", ("2", "2")),
    ("next", ("<list_iterator>",)),
    # negs = {x: -x for x in xs}
    ("iter", ("[1, 2]",)),
    ("next", ("<list_iterator>",)),
    ("operator.neg", ("1",)),
    ("next", ("<list_iterator>",)),
    ("operator.neg", ("2",)),
    ("next", ("<list_iterator>",)),
    # g = sum(x for x in xs): the generator function is called with the
    # iterator; sum drives it, its loop steps are operations
    ("iter", ("[1, 2]",)),
    ("program.<locals>.<genexpr>", ("<list_iterator>",)),
    ("sum", ("<generator program.<locals>.<genexpr>>",)),
    ("next", ("<list_iterator>",)),
    ("next", ("<list_iterator>",)),
    ("next", ("<list_iterator>",)),
    # t = (kw(5, k=2), kw(*[4], **{"k": 1}))
    ("kw", ("5",), (("k", "2"),)),
    ("operator.sub", ("5", "2")),
    ("kw", ("4",), (("k", "1"),)),
    ("operator.sub", ("4", "1")),
    # lst = [3, 1, 2]; lst.append(0)
    ("list.append", ("[3, 1, 2]", "0")),
    # lst[0] = lst[1] - lst[2]
    ("operator.getitem", ("[3, 1, 2, 0]", "1")),
    ("operator.getitem", ("[3, 1, 2, 0]", "2")),
    ("operator.sub", ("1", "2")),
    ("operator.setitem", ("[3, 1, 2, 0]", "0", "-1")),
    # del lst[3]
    ("operator.delitem", ("[-1, 1, 2, 0]", "3")),
    # part = lst[0:2]
    ("operator.getitem", ("[-1, 1, 2]", "slice(0, 2, None)")),
    # lst[1:2] = [7]
    ("operator.setitem", ("[-1, 1, 2]", "slice(1, 2, None)", "[7]")),
    # v.x = 10; del v.y
    ("setattr", ("Vec(1, -2)", "'x'", "10")),
    ("delattr", ("Vec(10, -2)", "'y'")),
    # flag = not n; inside = 2 in lst
    ("operator.not_", ("3",)),
    ("operator.contains", ("[-1, 7, 2]", "2")),
    # unary = (-n, ~n, +n)
    ("operator.neg", ("3",)),
    ("operator.invert", ("3",)),
    ("operator.pos", ("3",)),
    # cmp = (n < 4, n <= 4, n == 4, n != 4, n > 4, n >= 4)
    ("operator.lt", ("3", "4")),
    ("operator.le", ("3", "4")),
    ("operator.eq", ("3", "4")),
    ("operator.ne", ("3", "4")),
    ("operator.gt", ("3", "4")),
    ("operator.ge", ("3", "4")),
    # with Box() as b: raise KeyError("k")
    ("Box", ()),
    ("Box.__enter__", ("Box()",)),
    ("KeyError", ("'k'",)),
    ("Box.__exit__", ("Box()", "KeyError", "KeyError('k',)", "<traceback>")),
]


def test_trace_of_every_row_is_the_specified_one():
    ctx = TraceRecorder(metadata=[])
    out = cassette.overdub(ctx, program, [1, 2])
    assert out == program([1, 2])
    assert ctx.metadata == EXPECTED


def test_trace_is_stable_across_runs_and_context_instances():
    first = TraceRecorder(metadata=[])
    cassette.overdub(first, program, [1, 2])
    second = TraceRecorder(metadata=[])
    cassette.overdub(second, program, [1, 2])
    cassette.overdub(first, program, [1, 2])
    assert second.metadata == EXPECTED
    assert first.metadata == EXPECTED + EXPECTED
