"""reference §3.1: every row of the operation table, as seen by a prehook that
records ``(f, args, kwargs)``.

Each test runs a small program overdubbed with :class:`Recorder`, checks that
it returns what the plain program returns, and compares the recorded
operations with the list the table prescribes.
"""

import operator

import pytest

import cassette
from overdub_support import Recorder, callees, only, record


# -- calls -------------------------------------------------------------------

def g(a, k=0):
    return (a, k)


def test_call_with_keyword_is_seen_with_keyword():
    def prog():
        return g(1, k=2)

    out, trace = record(prog)
    assert out == prog() == (1, 2)
    assert trace == [(g, (1,), {"k": 2})]


def test_call_with_star_args_is_seen_flattened():
    def prog(xs, kw):
        return g(*xs, **kw)

    out, trace = record(prog, [5], {"k": 6})
    assert out == prog([5], {"k": 6}) == (5, 6)
    assert trace == [(g, (5,), {"k": 6})]


def test_call_with_star_args_and_extra_positionals():
    def h(*args, **kwargs):
        return args, kwargs

    def prog(xs, kw):
        return h(0, *xs, z=9, **kw)

    out, trace = record(prog, (1, 2), {"y": 3})
    assert out == prog((1, 2), {"y": 3}) == ((0, 1, 2), {"z": 9, "y": 3})
    assert trace == [(h, (0, 1, 2), {"z": 9, "y": 3})]


def test_builtin_function_call():
    def prog(xs):
        return len(xs), max(xs, default=None)

    out, trace = record(prog, [3, 1])
    assert out == (2, 3)
    assert trace == [(len, ([3, 1],), {}), (max, ([3, 1],), {"default": None})]


# -- method calls ----------------------------------------------------------------

class Account:
    def __init__(self, balance):
        self.balance = balance

    def deposit(self, amount, *, note=""):
        return amount

    @classmethod
    def open(cls, amount):
        return amount * 2

    @staticmethod
    def fee(amount):
        return amount // 10


def test_method_call_is_seen_as_class_function_with_self():
    acct = Account.__new__(Account)

    def prog(a):
        return a.deposit(5, note="x")

    out, trace = record(prog, acct)
    assert out == prog(acct) == 5
    assert trace == [(Account.deposit, (acct, 5), {"note": "x"})]


def test_call_of_a_bound_method_object():
    acct = Account.__new__(Account)
    bound = acct.deposit

    def prog(m):
        return m(7)

    out, trace = record(prog, bound)
    assert out == 7
    assert trace == [(Account.deposit, (acct, 7), {})]


def test_method_call_with_star_args():
    acct = Account.__new__(Account)

    def prog(a, xs):
        return a.deposit(*xs)

    out, trace = record(prog, acct, [8])
    assert out == 8
    assert trace == [(Account.deposit, (acct, 8), {})]


def test_builtin_method_call_is_seen_as_descriptor_with_self():
    def prog():
        lst = []
        lst.append(3)
        d = {}
        d.setdefault("k", 4)
        return lst, d

    out, trace = record(prog)
    assert out == prog() == ([3], {"k": 4})
    lst, d = out
    assert trace == [(list.append, (lst, 3), {}), (dict.setdefault, (d, "k", 4), {})]
    assert trace[0][1][0] is lst and trace[1][1][0] is d


def test_builtin_bound_method_object_call():
    lst = []

    def prog(push):
        push(1)
        return push

    record(prog, lst.append)
    out, trace = record(prog, lst.append)
    assert lst == [1, 1]
    assert trace[0][0] is list.append and trace[0][1] == (lst, 1)


def test_classmethod_and_staticmethod_calls():
    def prog():
        return Account.open(3), Account.fee(50)

    out, trace = record(prog)
    assert out == prog() == (6, 5)
    # A classmethod is a method bound to the class: hooks see its function
    # with the class first.  A staticmethod is a plain function.
    assert trace == [
        (Account.open.__func__, (Account, 3), {}),
        (operator.mul, (3, 2), {}),
        (Account.fee, (50,), {}),
        (operator.floordiv, (50, 10), {}),
    ]


def test_method_stored_in_instance_dict_is_called_without_self():
    class Box:
        pass

    box = Box()
    box.run = g

    def prog(b):
        return b.run(4)

    out, trace = record(prog, box)
    assert out == (4, 0)
    assert only(trace, g) == [(g, (4,), {})]
    # the attribute load of a non-method is an attribute row operation or
    # part of the call; either way g is called with (4,) and no self.
    assert all(entry[1][:1] != (box,) for entry in only(trace, g))


def test_super_method_call():
    class Base:
        def m(self, x):
            return x + 1

    class Derived(Base):
        def m(self, x):
            return super().m(x) * 2

    obj = Derived()

    def prog(o):
        return o.m(3)

    out, trace = record(prog, obj)
    assert out == prog(obj) == 8
    assert callees(only(trace, Base.m, Derived.m)) == [Derived.m, Base.m]
    assert only(trace, Base.m) == [(Base.m, (obj, 3), {})]


def test_builtin_method_reached_through_super_is_the_base_descriptor():
    class Doubling(list):
        def append(self, x):
            super().append(x * 2)

    def prog(s):
        s.append(1)
        return s

    s = Doubling()
    out, trace = record(prog, s)
    assert out == [2]
    assert only(trace, Doubling.append) == [(Doubling.append, (s, 1), {})]
    assert only(trace, list.append) == [(list.append, (s, 2), {})]


def test_metaclass_method_bound_to_a_class():
    class Meta(type):
        pass

    class K(metaclass=Meta):
        pass

    out, trace = record(lambda: K.mro())
    assert out == [K, object]
    assert only(trace, type.mro) == [(type.mro, (K,), {})]


# -- class calls --------------------------------------------------------------------

def test_class_call_then_python_init_as_operations():
    def prog():
        return Account(10)

    out, trace = record(prog)
    assert type(out) is Account and out.balance == 10
    assert trace[:3] == [
        (Account, (10,), {}),
        (object.__new__, (Account, 10), {}),
        (Account.__init__, (out, 10), {}),
    ]
    assert trace[3:] == [(setattr, (out, "balance", 10), {})]


def test_class_call_with_python_new_and_init():
    log = []

    class Point:
        def __new__(cls, x, y=0):
            log.append("new")
            return super().__new__(cls)

        def __init__(self, x, y=0):
            self.x = x
            self.y = y

    def prog():
        return Point(1, y=2)

    out, trace = record(prog)
    assert (out.x, out.y) == (1, 2)
    top = only(trace, Point, Point.__new__, Point.__init__)
    assert top == [
        (Point, (1,), {"y": 2}),
        (Point.__new__, (Point, 1), {"y": 2}),
        (Point.__init__, (out, 1), {"y": 2}),
    ]
    # the bodies ran overdubbed: the list append and the stores are seen
    assert (list.append, (log, "new"), {}) in trace
    assert (setattr, (out, "y", 2), {}) in trace


def test_class_without_python_new_or_init_is_a_primitive_call():
    class Plain:
        pass

    def prog():
        return Plain()

    out, trace = record(prog)
    assert type(out) is Plain
    assert trace == [(Plain, (), {})]


def test_new_returning_other_type_skips_init():
    class Weird:
        def __new__(cls):
            return 42

        def __init__(self):  # pragma: no cover - never runs, plainly either
            raise AssertionError("not called")

    def prog():
        return Weird()

    out, trace = record(prog)
    assert out == prog() == 42
    assert callees(trace) == [Weird, Weird.__new__]


# -- operators ---------------------------------------------------------------------

BINARY = [
    (operator.add, lambda a, b: a + b),
    (operator.sub, lambda a, b: a - b),
    (operator.mul, lambda a, b: a * b),
    (operator.truediv, lambda a, b: a / b),
    (operator.floordiv, lambda a, b: a // b),
    (operator.mod, lambda a, b: a % b),
    (operator.pow, lambda a, b: a ** b),
    (operator.lshift, lambda a, b: a << b),
    (operator.rshift, lambda a, b: a >> b),
    (operator.and_, lambda a, b: a & b),
    (operator.or_, lambda a, b: a | b),
    (operator.xor, lambda a, b: a ^ b),
]


@pytest.mark.parametrize("op, prog", BINARY, ids=[op.__name__ for op, _ in BINARY])
def test_binary_operator(op, prog):
    out, trace = record(prog, 13, 3)
    assert out == prog(13, 3) == op(13, 3)
    assert trace == [(op, (13, 3), {})]


def test_matmul_operator():
    class M:
        def __matmul__(self, other):
            return "mm"

    m = M()
    out, trace = record(lambda a, b: a @ b, m, m)
    assert out == "mm"
    assert trace[0] == (operator.matmul, (m, m), {})


def _inplace(symbol):
    namespace = {}
    exec(f"def prog(a, b):\n    a {symbol}= b\n    return a\n", namespace)
    return namespace["prog"]


INPLACE = [
    (operator.iadd, "+"), (operator.isub, "-"), (operator.imul, "*"),
    (operator.itruediv, "/"), (operator.ifloordiv, "//"), (operator.imod, "%"),
    (operator.ipow, "**"), (operator.ilshift, "<<"), (operator.irshift, ">>"),
    (operator.iand, "&"), (operator.ior, "|"), (operator.ixor, "^"),
]


@pytest.mark.parametrize("op, symbol", INPLACE, ids=[op.__name__ for op, _ in INPLACE])
def test_inplace_operator(op, symbol):
    prog = _inplace(symbol)
    out, trace = record(prog, 13, 3)
    assert out == prog(13, 3) == op(13, 3)
    assert trace == [(op, (13, 3), {})]


def test_inplace_add_on_list_mutates_like_plain():
    def prog(a, b):
        alias = a
        a += b
        return a is alias, a

    lst = [1]
    out, trace = record(prog, lst, [2])
    assert out == (True, [1, 2])
    assert trace == [(operator.iadd, (lst, [2]), {})]


UNARY = [
    (operator.neg, lambda a: -a),
    (operator.pos, lambda a: +a),
    (operator.invert, lambda a: ~a),
    (operator.not_, lambda a: not a),
]


@pytest.mark.parametrize("op, prog", UNARY, ids=[op.__name__ for op, _ in UNARY])
def test_unary_operator(op, prog):
    out, trace = record(prog, 6)
    assert out == prog(6) == op(6)
    assert trace == [(op, (6,), {})]


COMPARE = [
    (operator.lt, lambda a, b: a < b),
    (operator.le, lambda a, b: a <= b),
    (operator.eq, lambda a, b: a == b),
    (operator.ne, lambda a, b: a != b),
    (operator.gt, lambda a, b: a > b),
    (operator.ge, lambda a, b: a >= b),
]


@pytest.mark.parametrize("op, prog", COMPARE, ids=[op.__name__ for op, _ in COMPARE])
@pytest.mark.parametrize("a, b", [(1, 2), (2, 2), (3, 2)])
def test_comparison(op, prog, a, b):
    out, trace = record(prog, a, b)
    assert out is prog(a, b)
    assert trace == [(op, (a, b), {})]


def test_comparison_in_a_branch():
    def prog(a, b):
        if a < b:
            return "less"
        return "not less"

    assert record(prog, 1, 2) == ("less", [(operator.lt, (1, 2), {})])
    assert record(prog, 2, 1) == ("not less", [(operator.lt, (2, 1), {})])


def test_chained_comparison():
    def prog(a, b, c):
        return a < b <= c

    out, trace = record(prog, 1, 2, 2)
    assert out is True
    assert trace == [(operator.lt, (1, 2), {}), (operator.le, (2, 2), {})]
    out, trace = record(prog, 3, 2, 2)
    assert out is False
    assert trace == [(operator.lt, (3, 2), {})]


def test_contains_and_not_contains():
    def prog(x, s):
        return x in s, x not in s

    s = {1, 2}
    out, trace = record(prog, 2, s)
    assert out == (True, False)
    assert trace == [(operator.contains, (s, 2), {}), (operator.contains, (s, 2), {})]


def test_not_in_a_value_position():
    def prog(x):
        y = not x
        return y

    assert record(prog, []) == (True, [(operator.not_, ([],), {})])


def test_is_is_not_an_operation():
    def prog(a, b):
        return a is b, a is not b

    assert record(prog, 1, None) == ((False, True), [])


# -- subscripts ------------------------------------------------------------------

def test_subscript_get_set_del():
    def prog(d):
        v = d["a"]
        d["b"] = v
        del d["a"]
        return v

    d = {"a": 1}
    out, trace = record(prog, d)
    assert out == 1 and d == {"b": 1}
    assert trace == [
        (operator.getitem, (d, "a"), {}),
        (operator.setitem, (d, "b", 1), {}),
        (operator.delitem, (d, "a"), {}),
    ]


def test_slices_are_subscripts_with_a_slice():
    def prog(a, i, j):
        s = a[i:j]
        a[i:j] = [9]
        t = a[::2]
        del a[:1]
        return s, t

    lst = [0, 1, 2, 3, 4]
    plain = [0, 1, 2, 3, 4]
    expected = prog(plain, 1, 3)
    out, trace = record(prog, lst, 1, 3)
    assert out == expected and lst == plain
    assert trace == [
        (operator.getitem, (lst, slice(1, 3)), {}),
        (operator.setitem, (lst, slice(1, 3), [9]), {}),
        (operator.getitem, (lst, slice(None, None, 2)), {}),
        (operator.delitem, (lst, slice(None, 1)), {}),
    ]


def test_augmented_subscript_assignment():
    def prog(a):
        a[0] += 5
        return a

    lst = [1]
    out, trace = record(prog, lst)
    assert out == [6]
    assert trace == [
        (operator.getitem, (lst, 0), {}),
        (operator.iadd, (1, 5), {}),
        (operator.setitem, (lst, 0, 6), {}),
    ]


# -- attributes ------------------------------------------------------------------

class Obj:
    pass


def test_attribute_get_set_del():
    def prog(o):
        o.x = 1
        y = o.x
        del o.x
        return y, hasattr(o, "x")

    o = Obj()
    out, trace = record(prog, o)
    assert out == (1, False)
    assert trace == [
        (setattr, (o, "x", 1), {}),
        (getattr, (o, "x"), {}),
        (delattr, (o, "x"), {}),
        (hasattr, (o, "x"), {}),
    ]


def test_augmented_attribute_assignment():
    def prog(o):
        o.n += 2
        return o.n

    o = Obj()
    o.n = 1
    out, trace = record(prog, o)
    assert out == 3
    assert trace == [
        (getattr, (o, "n"), {}),
        (operator.iadd, (1, 2), {}),
        (setattr, (o, "n", 3), {}),
        (getattr, (o, "n"), {}),
    ]


def test_module_attribute_load_is_an_attribute_operation():
    import math

    def prog():
        return math.pi

    out, trace = record(prog)
    assert out == 3.141592653589793
    assert trace == [(getattr, (math, "pi"), {})]


# -- for -----------------------------------------------------------------------------

def test_for_loop_iter_then_next_per_step_including_the_last():
    def prog(xs):
        total = 0
        for x in xs:
            total = total + x
        return total

    xs = [1, 2]
    out, trace = record(prog, xs)
    assert out == 3
    assert [f for f, _, _ in trace] == [
        iter, next, operator.add, next, operator.add, next,
    ]
    assert trace[0] == (iter, (xs,), {})
    iterator = trace[1][1][0]
    assert type(iterator) is type(iter(xs))
    assert all(args == (iterator,) for f, args, _ in trace if f is next)
    assert trace[2] == (operator.add, (0, 1), {})
    assert trace[4] == (operator.add, (1, 2), {})


def test_for_loop_over_empty_iterable():
    def prog(xs):
        for _ in xs:
            raise AssertionError("unreachable")
        return "done"

    out, trace = record(prog, ())
    assert out == "done"
    assert callees(trace) == [iter, next]


def test_for_loop_break_and_else():
    def prog(xs, stop):
        for x in xs:
            if x == stop:
                break
        else:
            return "exhausted"
        return x

    out, trace = record(prog, [1, 2, 3], 2)
    assert out == 2
    assert callees(trace) == [iter, next, operator.eq, next, operator.eq]
    out, trace = record(prog, [1], 5)
    assert out == "exhausted"
    assert callees(trace) == [iter, next, operator.eq, next]


def test_for_loop_over_a_python_iterator():
    class Countdown:
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return self

        def __next__(self):
            if self.n == 0:
                raise StopIteration
            self.n = self.n - 1
            return self.n

    def prog(it):
        return [x for x in it]

    c = Countdown(2)
    out, trace = record(prog, c)
    assert out == [1, 0]
    assert only(trace, iter) == [(iter, (c,), {})]
    assert only(trace, next) == [(next, (c,), {})] * 3


def test_next_builtin_called_explicitly_is_a_call():
    def prog(xs):
        it = iter(xs)
        return next(it), next(it, "default"), next(it, "default")

    out, trace = record(prog, [1])
    assert out == (1, "default", "default")
    assert callees(trace) == [iter, next, next, next]
    assert trace[2][1][1:] == ("default",)


# -- with ----------------------------------------------------------------------------

class Manager:
    def __init__(self, suppress=False):
        self.log = []
        self.suppress = suppress

    def __enter__(self):
        self.log.append("enter")
        return "value"

    def __exit__(self, et, ev, tb):
        self.log.append(et)
        return self.suppress


def test_with_enter_and_exit_without_exception():
    def prog(cm):
        with cm as v:
            got = v
        return got

    cm = Manager()
    out, trace = record(prog, cm)
    assert out == "value" and cm.log == ["enter", None]
    top = only(trace, Manager.__enter__, Manager.__exit__)
    assert top == [
        (Manager.__enter__, (cm,), {}),
        (Manager.__exit__, (cm, None, None, None), {}),
    ]


def test_with_exit_sees_the_exception():
    def prog(cm):
        with cm:
            raise KeyError("k")

    cm = Manager()
    with pytest.raises(KeyError):
        record(prog, cm)
    assert cm.log == ["enter", KeyError]
    ctx = Recorder(metadata=[])
    with pytest.raises(KeyError) as info:
        cassette.overdub(ctx, prog, cm)
    exits = only(ctx.metadata, Manager.__exit__)
    assert len(exits) == 1
    _, (obj, et, ev, tb), _ = exits[0]
    assert obj is cm and et is KeyError and ev is info.value
    assert tb is not None and tb.tb_frame is not None


def test_with_exit_suppressing_the_exception():
    def prog(cm):
        with cm:
            raise KeyError("k")
        return "after"

    cm = Manager(suppress=True)
    out, trace = record(prog, cm)
    assert out == "after" and cm.log == ["enter", KeyError]
    exits = only(trace, Manager.__exit__)
    assert len(exits) == 1 and exits[0][1][1] is KeyError


def test_with_on_a_non_manager_raises_like_plain():
    def prog():
        with 42:
            pass

    with pytest.raises(TypeError) as plain:
        prog()
    with pytest.raises(TypeError) as dubbed:
        record(prog)
    assert str(dubbed.value) == str(plain.value)


def test_nested_with_and_return_inside():
    def prog(a, b):
        with a:
            with b as v:
                return v

    a, b = Manager(), Manager()
    out, trace = record(prog, a, b)
    assert out == "value" and a.log == ["enter", None] and b.log == ["enter", None]
    assert [(f, args[0]) for f, args, _ in only(trace, Manager.__enter__, Manager.__exit__)] == [
        (Manager.__enter__, a), (Manager.__enter__, b),
        (Manager.__exit__, b), (Manager.__exit__, a),
    ]
