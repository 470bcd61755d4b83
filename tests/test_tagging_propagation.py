"""reference §6: metadata propagates, without user code, through object
construction and attributes, containers and their methods, comprehensions,
unpacking, star-arguments and varargs, module globals and numeric
conversions — while the program's data holds primal values only.

The context here has no handler at all: labels (strings) ride on values and
every operation runs as plain Python would run it.  Each test compares what
the run returns with the same function run plainly, and the labels read
back with the labels put in.
"""

import collections
import json
import math

import pytest

import cassette
from cassette import (NoMetaData, NoMetaMeta, enabletagging, istagged, metadata,
                      metameta, overdub, tag, untag)


class Labels(cassette.Context):
    """Values of any type may carry a string label."""

    @classmethod
    def metadatatype(cls, T):
        return str


class Tangents(cassette.Context):
    """Numbers carry float metadata; nothing else carries any."""

    @classmethod
    def metadatatype(cls, T):
        return float if T in (int, float, complex) else None


def labelled(ctx, value):
    """``(primal, label)`` of a value read back in the run."""
    return untag(value, ctx), metadata(value, ctx)


def new_context(kind=Labels):
    return enabletagging(kind(), labelled)


def run(f, *values, labels=None):
    """``f`` overdubbed with each value tagged by its label; returns the
    context and the result."""
    ctx = new_context()
    labels = labels or [f"x{i}" for i in range(len(values))]
    args = [tag(v, ctx, label) for v, label in zip(values, labels)]
    return ctx, overdub(ctx, f, *args)


def assert_primal_only(data):
    """No tagged value anywhere in ``data`` (lists, tuples, dicts, sets,
    objects' ``__dict__``)."""
    seen = set()

    def walk(x):
        assert not isinstance(type(x), type(cassette.Tagged)), f"wrapper leaked: {type(x)}"
        if id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, (list, tuple, set, frozenset)):
            for element in x:
                walk(element)
        elif isinstance(x, dict):
            for key, value in x.items():
                walk(key)
                walk(value)
        elif hasattr(x, "__dict__") and not isinstance(x, type):
            walk(vars(x))
    walk(data)


# -- lists ------------------------------------------------------------------------

def test_a_list_display_keeps_each_elements_metadata_and_holds_primal_values():
    def f(a, b):
        return [a, b, 3.0]

    ctx = new_context()
    out = overdub(ctx, f, tag(1.0, ctx, "a"), tag(2.0, ctx, "b"))
    assert out == [1.0, 2.0, 3.0] and [type(v) for v in out] == [float] * 3
    assert_primal_only(out)
    assert [m.data for m in metameta(out, ctx)] == ["a", "b", NoMetaData]


def test_reading_an_element_gives_the_tagged_value_back():
    def f(a, b):
        items = [a, b]
        first, second = items[0], items[-1]
        return labelled(ctx, first), labelled(ctx, second), labelled(ctx, items[1:][0])

    ctx = new_context()
    assert overdub(ctx, f, tag(1.5, ctx, "a"), tag(2.5, ctx, "b")) == (
        (1.5, "a"), (2.5, "b"), (2.5, "b"))


def test_list_methods_keep_metadata_in_step_with_the_elements():
    def program(a, b, c):
        items = []
        items.append(b)
        items.insert(0, a)
        items.extend([c, 9.0])
        items[3] = c
        popped = items.pop(1)
        items.sort(reverse=True)
        items.reverse()
        del items[0]
        return items, popped

    values = (5.0, 1.0, 3.0)
    plain_items, plain_popped = program(*values)
    ctx = new_context()
    by_value = {5.0: "a", 1.0: "b", 3.0: "c"}

    def probe(a, b, c):
        items, popped = program(a, b, c)
        return [labelled(ctx, v) for v in items], labelled(ctx, popped), items

    read, popped, items = overdub(ctx, probe, *(tag(v, ctx, by_value[v]) for v in values))
    assert [v for v, _ in read] == plain_items
    assert [label for _, label in read] == [by_value[v] for v in plain_items]
    assert popped == (plain_popped, by_value[plain_popped])
    assert items == plain_items
    assert_primal_only(items)


def test_a_comprehension_and_iteration_carry_metadata():
    def f(a, b):
        doubled = [v for v in [a, b]]
        pairs = {k: v for k, v in zip("pq", doubled)}
        chosen = {v for v in doubled}
        return ([labelled(ctx, v) for v in doubled],
                sorted(labelled(ctx, pairs[k]) for k in "pq"),
                sorted(labelled(ctx, v) for v in chosen))

    ctx = new_context()
    out = overdub(ctx, f, tag(1.0, ctx, "a"), tag(2.0, ctx, "b"))
    assert out == ([(1.0, "a"), (2.0, "b")], [(1.0, "a"), (2.0, "b")],
                   [(1.0, "a"), (2.0, "b")])


# -- tuples, unpacking, star-arguments, varargs --------------------------------------

def test_unpacking_star_arguments_and_varargs_carry_metadata():
    def takes(*args, **kwargs):
        return [labelled(ctx, v) for v in args], sorted(
            (k, labelled(ctx, v)) for k, v in kwargs.items())

    def f(a, b):
        pair = (a, b)
        first, second = pair
        head, *rest = [a, b, a]
        positional = takes(*pair)
        mixed = takes(a, *[b])
        keywords = takes(**{"p": a, "q": b})
        return (labelled(ctx, first), labelled(ctx, second), labelled(ctx, head),
                [labelled(ctx, v) for v in rest], positional, mixed, keywords)

    ctx = new_context()
    out = overdub(ctx, f, tag(1.0, ctx, "a"), tag(2.0, ctx, "b"))
    assert out == ((1.0, "a"), (2.0, "b"), (1.0, "a"), [(2.0, "b"), (1.0, "a")],
                   ([(1.0, "a"), (2.0, "b")], []), ([(1.0, "a"), (2.0, "b")], []),
                   ([], [("p", (1.0, "a")), ("q", (2.0, "b"))]))


# -- dicts and sets -------------------------------------------------------------------

def test_dict_operations_keep_metadata_per_key():
    def f(a, b):
        table = {"a": a}
        table["b"] = b
        table.update(c=a)
        got = table.get("b")
        default = table.setdefault("d", b)
        popped = table.pop("a")
        values = [labelled(ctx, v) for v in table.values()]
        items = [(k, labelled(ctx, v)) for k, v in table.items()]
        return labelled(ctx, got), labelled(ctx, default), labelled(ctx, popped), values, items

    ctx = new_context()
    out = overdub(ctx, f, tag(1.0, ctx, "a"), tag(2.0, ctx, "b"))
    assert out == ((2.0, "b"), (2.0, "b"), (1.0, "a"),
                   [(2.0, "b"), (1.0, "a"), (2.0, "b")],
                   [("b", (2.0, "b")), ("c", (1.0, "a")), ("d", (2.0, "b"))])


# -- objects ------------------------------------------------------------------------

class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    @property
    def norm2(self):
        return self.x * self.x + self.y * self.y

    def moved(self, dx):
        self.x = dx
        return self


class Slotted:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def test_objects_born_in_the_run_carry_per_attribute_metadata():
    def f(a, b):
        p = Point(a, 2.0)
        s = Slotted(b)
        before = labelled(ctx, p.x), labelled(ctx, p.y), labelled(ctx, s.value)
        p.moved(b)
        return p, before, labelled(ctx, p.x), labelled(ctx, getattr(s, "value"))

    ctx = new_context()
    p, before, after, slotted = overdub(ctx, f, tag(1.0, ctx, "a"), tag(3.0, ctx, "b"))
    assert before == ((1.0, "a"), (2.0, NoMetaData), (3.0, "b"))
    assert after == (3.0, "b") and slotted == (3.0, "b")
    assert type(p.x) is float and vars(p) == {"x": 3.0, "y": 2.0}
    assert {name: m.data for name, m in metameta(p, ctx).items()} == {"x": "b"}


def test_arithmetic_drops_metadata_without_a_handler():
    def f(a):
        p = Point(a, a)
        return p.norm2, a + 1.0

    ctx = new_context()
    norm2, bumped = overdub(ctx, f, tag(3.0, ctx, "a"))
    assert (norm2, bumped) == (18.0, 4.0)
    assert not istagged(norm2, ctx) and not istagged(bumped, ctx)


# -- module globals ---------------------------------------------------------------------

SHARED = []
SETTING = 0.0


def store_setting(value):
    global SETTING
    SETTING = value
    SHARED.append(value)


def read_setting():
    return SETTING, SHARED[-1]


def test_module_globals_hold_primal_values_and_the_bindings_cache_the_metadata():
    del SHARED[:]

    def f(a):
        store_setting(a)
        return [labelled(ctx, v) for v in read_setting()]

    ctx = new_context()
    assert overdub(ctx, f, tag(7.0, ctx, "a")) == [(7.0, "a"), (7.0, "a")]
    assert type(SETTING) is float and SETTING == 7.0 and SHARED == [7.0]
    assert_primal_only(SHARED)
    assert len(ctx.bindingscache) >= 2          # the module namespace and SHARED
    # Another context sees ordinary values.
    other = new_context()
    assert overdub(other, lambda: [labelled(other, v) for v in read_setting()]) == [
        (7.0, NoMetaData), (7.0, NoMetaData)]


# -- identity, builtins, conversions -----------------------------------------------------

def test_is_compares_primal_values_and_builtins_see_primal_values():
    def f(a):
        items = [a]
        obj = Point(a, a)
        return (items[0] is a, items[0] is not obj.x, type(items[0]) is float,
                isinstance(a, float), json.dumps(items), math.fsum(items), sum(items))

    ctx = new_context()
    assert overdub(ctx, f, tag(0.5, ctx, "a")) == (True, False, True, True, "[0.5]", 0.5, 0.5)


def test_numeric_conversions_carry_metadata_converted_to_the_results_type():
    def f(a):
        converted = float(a), int(a), complex(a), str(a)
        return ([labelled(ctx, v) for v in converted],
                [type(untag(v, ctx)) for v in converted])

    ctx = new_context(Tangents)
    read, types = overdub(ctx, f, tag(2, ctx, 1.5))
    # str allows no metadata: its conversion drops it.
    assert read == [(2.0, 1.5), (2, 1.5), (2 + 0j, 1.5), ("2", NoMetaData)]
    assert types == [float, int, complex, str]


def test_a_store_into_data_from_outside_keeps_the_primal_value_only():
    outside = {"log": []}

    def f(a):
        outside["log"].append(a)
        outside["last"] = a
        return a * 2.0

    ctx = new_context()
    overdub(ctx, f, tag(1.25, ctx, "a"))
    assert outside == {"log": [1.25], "last": 1.25}
    assert_primal_only(outside)


def test_a_value_changed_outside_the_context_is_no_longer_tagged():
    box = []
    ctx = new_context()
    overdub(ctx, lambda a: box.append(a), tag(1.0, ctx, "a"))
    assert overdub(ctx, lambda: labelled(ctx, box[0])) == (1.0, "a")
    box[0] = 1.0 + 0.0 * len(box)        # a different float object, equal value
    assert overdub(ctx, lambda: labelled(ctx, box[0])) == (1.0, NoMetaData)


def test_metadata_of_nested_contexts_rides_through_a_list_independently():
    outer = new_context()
    inner = new_context()

    def inner_run(a, b):
        items = [a, b]
        return ([labelled(inner, v) for v in items],
                [metadata(untag(v, inner), outer) for v in items])

    def outer_run(a):
        return overdub(inner, inner_run, tag(a, inner, "inner-a"), 2.0)

    inner_labels, outer_labels = overdub(outer, outer_run, tag(1.0, outer, "outer-a"))
    assert [label for _, label in inner_labels] == ["inner-a", NoMetaData]
    assert outer_labels == ["outer-a", NoMetaData]


def test_temporary_containers_do_not_accumulate_in_the_bindings_cache():
    def f(a):
        total = 0.0
        for i in range(5000):
            pair = [a, float(i)]
            total += pair[1]
        return total

    ctx = new_context()
    assert overdub(ctx, f, tag(1.0, ctx, "a")) == f(1.0)
    assert len(ctx.bindingscache) < 2100


def test_no_metadata_means_no_records():
    def f(a, b):
        items = [a, b]
        return {"k": items}, Point(a, b)

    ctx = new_context()
    table, point = overdub(ctx, f, 1.0, 2.0)
    assert metameta(table, ctx) is NoMetaMeta and metameta(point, ctx) is NoMetaMeta
    assert len(ctx.bindingscache) == 0


@pytest.mark.parametrize("make", [
    lambda a, b: [a, b], lambda a, b: (a, b), lambda a, b: {a: b}, lambda a, b: {a, b},
    lambda a, b: [*[a], b], lambda a, b: (*[a], b), lambda a, b: {**{"k": a}, "m": b},
])
def test_displays_build_what_they_build_plainly(make):
    ctx = new_context()
    out = overdub(ctx, make, tag(1.0, ctx, "a"), tag(2.0, ctx, "b"))
    assert out == make(1.0, 2.0) and type(out) is type(make(1.0, 2.0))
    assert_primal_only(out)


class Box:
    def __init__(self, value):
        self.value = value

    def get(self):
        return self.value


class MethodSeer(cassette.Context):
    @classmethod
    def metadatatype(cls, T):
        return str


@cassette.execute.register(MethodSeer, Box.get)
def _seen_get(ctx, f, box):
    return ("seen", istagged(box, ctx), metadata(box, ctx), untag(box, ctx).value)


@cassette.execute.register(MethodSeer, list.count)
def _seen_count(ctx, f, items, value):
    return ("counted", istagged(items, ctx), metadata(items, ctx))


def test_a_method_call_on_a_tagged_value_sees_the_tagged_value():
    """``x.m(…)`` on a value tagged by the running context is the operation
    ``type(primal).m, (x, …)``: handlers see the tagged receiver (on 3.13
    the interpreter loads the method itself, through the tagged type)."""
    ctx = enabletagging(MethodSeer(), Box.get)
    box = tag(Box(3), ctx, "b")
    items = tag([1, 2, 1], ctx, "l")
    assert overdub(ctx, lambda b: b.get(), box) == ("seen", True, "b", 3)
    assert overdub(ctx, lambda l: l.count(1), items) == ("counted", True, "l")
    # Outside any run the tagged values act as their primal values.
    assert box.get() == 3 and items.count(1) == 2 and items.index(2) == 1


def test_numpy_array_elements_carry_their_own_metadata():
    np = pytest.importorskip("numpy")

    def f(a, b):
        built = np.array([a, 2.0, b])
        filled = np.zeros((2, 2))
        filled[1, 0] = b
        filled[0, 1] = 7.0
        return ([labelled(ctx, v) for v in built], labelled(ctx, filled[1, 0]),
                labelled(ctx, filled[-1, -2]), labelled(ctx, filled[0, 1]), built, filled)

    ctx = new_context()
    read, corner, again, plain, built, filled = overdub(ctx, f, tag(1.0, ctx, "a"),
                                                        tag(3.0, ctx, "b"))
    assert read == [(1.0, "a"), (2.0, NoMetaData), (3.0, "b")]
    assert corner == (3.0, "b") == again and plain == (7.0, NoMetaData)
    assert built.dtype == np.float64 and built.tolist() == [1.0, 2.0, 3.0]
    assert filled.tolist() == [[0.0, 7.0], [3.0, 0.0]]


def test_numpy_slice_stores_copies_iteration_and_tolist_keep_elements_metadata():
    """Like a list's (reference §6): a slice or row store of a list or of
    another array, a slice read, copies, np.array of nested lists, tolist
    and iteration; an element overwritten with a plain value forgets."""
    np = pytest.importorskip("numpy")

    def f(a, b):
        u = np.zeros(4)
        u[1:3] = [a, b]
        tail = u[1:]
        copied = u.copy()
        rows = np.array([[a, 1.0], [2.0, b]])
        grid = np.zeros((2, 2))
        grid[0] = [b, a]
        moved = np.zeros(4)
        moved[:] = u
        listed = u.tolist()
        seen = ([labelled(ctx, v) for v in tail], labelled(ctx, copied[2]),
                [labelled(ctx, v) for v in rows[1]], labelled(ctx, grid[0, 1]),
                labelled(ctx, moved[1]), labelled(ctx, np.array(copied)[1]),
                [labelled(ctx, v) for v in u], listed)
        u[1:3] = 0.0
        return seen, labelled(ctx, u[1]), labelled(ctx, np.copy(u)[2])

    ctx = new_context()
    (tail, copied, rows, grid, moved, again, iterated, listed), forgotten, gone = overdub(
        ctx, f, tag(3.0, ctx, "a"), tag(4.0, ctx, "b"))
    assert tail == [(3.0, "a"), (4.0, "b"), (0.0, NoMetaData)]
    assert copied == (4.0, "b") and moved == again == (3.0, "a")
    assert rows == [(2.0, NoMetaData), (4.0, "b")] and grid == (3.0, "a")
    assert iterated == [(0.0, NoMetaData), (3.0, "a"), (4.0, "b"), (0.0, NoMetaData)]
    assert listed == [0.0, 3.0, 4.0, 0.0]
    assert [m.data for m in cassette.metameta(listed, ctx)] == [NoMetaData, "a", "b", NoMetaData]
    assert forgotten == (0.0, NoMetaData) == gone


Pair = collections.namedtuple("Pair", "first second")


class SeeingOperators(Labels):
    """Labels, looking for losses: every operator site is rewritten (a
    context with no handler leaves ``+=`` to the interpreter, §3.1)."""

    metadata_loss = "raise"


def test_named_tuples_and_tuple_concatenation_keep_elements_metadata():
    """``t += (b,)`` makes a new tuple and a named tuple is made by
    ``tuple.__new__``: both keep each element's metadata (numpy's
    ``unique(..., return_counts=True)`` builds its result so)."""
    def f(a, b):
        t = (a,)
        t += (b, 3.0)
        pair = Pair(*t[:2])
        return t, pair, [labelled(ctx, v) for v in t], labelled(ctx, pair.second)

    ctx = enabletagging(SeeingOperators(), f)
    t, pair, labels, second = overdub(ctx, f, tag(1.0, ctx, "a"), tag(2.0, ctx, "b"))
    assert t == (1.0, 2.0, 3.0) and pair == Pair(1.0, 2.0) and type(pair) is Pair
    assert labels == [(1.0, "a"), (2.0, "b"), (3.0, NoMetaData)]
    assert second == (2.0, "b")
    assert [m.data for m in cassette.metameta(pair, ctx)] == ["a", "b"]


def test_a_whole_numpy_array_can_be_tagged():
    np = pytest.importorskip("numpy")
    ctx = new_context()
    array = tag(np.arange(3.0), ctx, "whole")

    def f(a):
        return labelled(ctx, a), float(np.sum(a))

    (primal, label), total = overdub(ctx, f, array)
    assert label == "whole" and primal.tolist() == [0.0, 1.0, 2.0] and total == 3.0


def test_varargs_and_kwargs_hold_primal_values_with_their_metadata():
    def gather(*args, **kwargs):
        return (json.dumps([args, kwargs]), [labelled(ctx, v) for v in args],
                sorted((k, labelled(ctx, v)) for k, v in kwargs.items()))

    def closed_over(*args):
        def inner():
            return [labelled(ctx, v) for v in args]
        return inner()

    def f(a, b):
        return gather(a, 2.0, key=b), closed_over(b, a)

    ctx = new_context()
    (text, positional, keywords), captured = overdub(ctx, f, tag(1.0, ctx, "a"),
                                                    tag(3.0, ctx, "b"))
    assert text == '[[1.0, 2.0], {"key": 3.0}]'
    assert positional == [(1.0, "a"), (2.0, NoMetaData)]
    assert keywords == [("key", (3.0, "b"))]
    assert captured == [(3.0, "b"), (1.0, "a")]


def test_elements_moved_by_a_builtin_keep_their_metadata():
    """``heapq.heapify`` (C) reorders a list behind cassette's back: reads
    find each element's metadata again by identity."""
    import heapq

    def f(a, b, c):
        items = [a, b, c]
        heapq.heapify(items)
        return [labelled(ctx, v) for v in items], [labelled(ctx, items[i]) for i in (2, 0, 1)]

    values = (5.0, 1.0, 3.0)
    plain = list(values)
    heapq.heapify(plain)
    ctx = new_context()
    by_value = {5.0: "a", 1.0: "b", 3.0: "c"}
    iterated, indexed = overdub(ctx, f, *(tag(v, ctx, by_value[v]) for v in values))
    assert iterated == [(v, by_value[v]) for v in plain]
    assert indexed == [(plain[i], by_value[plain[i]]) for i in (2, 0, 1)]


def test_element_access_of_a_recorded_list_fails_as_plainly_for_any_index():
    """Reads and writes of a list built in the run are decided in the core;
    an index out of range — or beyond any index — raises what it raises
    plainly, and an index in range keeps the element's metadata."""

    def program(x, i):
        xs = [x, 2.0 * x, x]
        outcome = []
        for attempt in (lambda: xs[i], lambda: xs.__setitem__(i, x)):
            try:
                outcome.append(attempt())
            except Exception as error:
                outcome.append((type(error).__name__, str(error)))
        return outcome, xs

    for index in (10**30, -10**30, 3, -4, 1, -1):
        plain_outcome, plain_xs = program(1.5, index)
        ctx = new_context()

        def probe(x, i):
            outcome, xs = program(x, i)
            return outcome, metadata(outcome[0], ctx), [labelled(ctx, v) for v in xs]

        outcome, read_label, elements = overdub(ctx, probe, tag(1.5, ctx, "x"), index)
        assert outcome == plain_outcome
        assert [value for value, _label in elements] == plain_xs
        if index in (1, -1):        # in range: the element read back, the store labelled
            assert read_label == ("x" if index == -1 else NoMetaData)
            assert elements[index][1] == "x"
        else:
            assert outcome[0][0] == "IndexError" and read_label is NoMetaData


def test_a_first_store_into_a_list_made_outside_the_run_records_the_element():
    """A list the run did not build has no record until a tagged value is
    stored into it: that store makes one (out of range: what plain Python
    raises, and no record)."""
    box = [0.0, 0.5, 1.0]

    def f(a, i):
        box[i] = a
        return labelled(ctx, box[i]), labelled(ctx, box[0])

    ctx = new_context()
    assert overdub(ctx, f, tag(2.5, ctx, "a"), 1) == ((2.5, "a"), (0.0, NoMetaData))
    assert box == [0.0, 2.5, 1.0]
    assert_primal_only(box)
    assert [m.data for m in metameta(box, ctx)] == [NoMetaData, "a", NoMetaData]
    assert overdub(ctx, lambda: labelled(ctx, box[-2])) == (2.5, "a")

    elsewhere = [0.0]
    with pytest.raises(IndexError) as raised:
        overdub(ctx, lambda a: elsewhere.__setitem__(3, a), tag(1.0, ctx, "b"))
    with pytest.raises(IndexError) as plain:
        elsewhere[3] = 1.0
    assert str(raised.value) == str(plain.value)
    assert metameta(elsewhere, ctx) is NoMetaMeta


def test_many_lists_read_in_turn_each_keep_their_own_metadata():
    """Reads alternating between more lists than a runtime remembers
    records of find each list's own metadata."""
    count = 53

    def program(xs):
        lists = [[x, 2.0 * i, x] for i, x in enumerate(xs)]
        reads = []
        for step in range(3):
            for k in range(0, count, 1 + step):
                reads.append(lists[(k * 7) % count][0])
                reads.append(lists[(k * 11) % count][1])
        return reads, lists

    values = [float(i) for i in range(count)]
    plain_reads, plain_lists = program(values)
    ctx = new_context()

    def probe(*xs):
        reads, lists = program(list(xs))
        return [labelled(ctx, v) for v in reads], lists

    labels = [f"x{i}" for i in range(count)]
    reads, lists = overdub(ctx, probe, *(tag(v, ctx, label) for v, label in zip(values, labels)))
    assert [value for value, _ in reads] == plain_reads
    expected = []
    for step in range(3):
        for k in range(0, count, 1 + step):
            expected += [labels[(k * 7) % count], NoMetaData]
    assert [label for _, label in reads] == expected
    assert lists == plain_lists
    assert [[m.data for m in metameta(row, ctx)] for row in lists[:2]] == [
        ["x0", NoMetaData, "x0"], ["x1", NoMetaData, "x1"]]


def test_lists_the_bindings_cache_dropped_lend_no_metadata_to_later_lists():
    """Thousands of short-lived recorded lists (their records swept) are
    followed by plain lists, some of them at the addresses the dropped ones
    had: those read back without metadata."""
    def program(a):
        total = 0.0
        for i in range(3000):
            pair = [a, float(i)]
            total += pair[1]
        fresh = [[float(i), float(i)] for i in range(3000)]
        return total, [row[0] for row in fresh]

    ctx = new_context()
    plain_total, plain_firsts = program(1.0)

    def probe(a):
        total, firsts = program(a)
        return total, [metadata(v, ctx) for v in firsts], firsts

    total, labels, firsts = overdub(ctx, probe, tag(1.0, ctx, "a"))
    assert total == plain_total and firsts == plain_firsts
    assert labels == [NoMetaData] * 3000
    assert len(ctx.bindingscache) < 2100


def test_a_list_display_leaves_values_of_another_context_as_they_are():
    """Only the running context's tags come off when a list is built: a
    value tagged by an unrelated context stays in the list, tagged."""
    other = new_context()
    foreign = tag(4.0, other, "other")

    def f(a, b):
        items = [a, b]
        return items, items[1] is b, labelled(ctx, items[0])

    ctx = new_context()
    items, same, first = overdub(ctx, f, tag(1.0, ctx, "a"), foreign)
    assert same and first == (1.0, "a")
    assert items[1] is foreign and metadata(items[1], other) == "other"
    assert [m.data for m in metameta(items, ctx)] == ["a", NoMetaData]


# -- what metameta reports after a run (Cassette's tagged tuples and structs) --

def _as_data(meta):
    """metameta's answer as plain data: (data, nested) pairs, recursively."""
    if meta is NoMetaMeta:
        return None
    if isinstance(meta, list):
        return [_as_data(m) for m in meta]
    if isinstance(meta, dict):
        return {k: _as_data(m) for k, m in meta.items()}
    return (meta.data, _as_data(meta.meta))


def build_nested(x):
    return (x, [x], 1)


def test_a_tuple_built_in_the_run_reports_nested_per_component_metadata():
    run = enabletagging(Labels(), build_nested)
    out = overdub(run, build_nested, tag(2.5, run, "x"))
    assert out == build_nested(2.5) and type(out[0]) is float
    assert _as_data(metameta(out, run)) == [
        ("x", None), (NoMetaData, [("x", None)]), (NoMetaData, None)]


class Crate:
    pass


def store_into(box, value):
    box.content = value
    box.count = 1
    return box


def test_stores_into_a_tagged_object_are_its_components_metadata():
    run = enabletagging(Labels(), store_into)
    box = tag(Crate(), run, "the box")
    out = overdub(run, store_into, box, tag(7, run, "seven"))
    assert metadata(out, run) == "the box"
    assert untag(out, run).content == 7 and type(untag(out, run).content) is int
    assert _as_data(metameta(out, run)) == {"content": ("seven", None)}
    assert _as_data(metameta(untag(out, run), run)) == {"content": ("seven", None)}


def set_display(a, b):
    displayed = {a, b}
    built = {v for v in (a, b)}
    return displayed, built, sorted(metadata(v, run_sets) for v in displayed), sorted(
        metadata(v, run_sets) for v in built)


run_sets = enabletagging(Labels(), set_display)


def test_a_set_display_keeps_its_elements_metadata():
    displayed, built, read, read_built = overdub(
        run_sets, set_display, tag(1, run_sets, "one"), tag(2, run_sets, "two"))
    assert displayed == built == {1, 2}
    assert read == read_built == ["one", "two"]
    assert _as_data(metameta(displayed, run_sets)) == {1: ("one", None), 2: ("two", None)}


def test_a_list_found_without_a_record_is_asked_again_once_it_gets_one():
    """The core remembers which lists have no record; a record made
    afterwards — by a store the core decides, by a list method the
    propagation layer handles — is seen by the very next read of the same
    list in the same run."""

    def program(a, box, other):
        before = (box[0], other[0])          # no records yet: remembered so
        box[1] = a                           # the core records the store
        other.append(a)                      # the propagation layer records it
        return before, box[1], other[-1], other[1], box, other

    plain = program(2.5, [0.0, 0.5], [1.0])
    ctx = new_context()

    def probe(a):
        before, read, appended, indexed, box, other = program(a, [0.0, 0.5], [1.0])
        return (before, labelled(ctx, read), labelled(ctx, appended), labelled(ctx, indexed),
                box, other)

    before, read, appended, indexed, box, other = overdub(ctx, probe, tag(2.5, ctx, "a"))
    assert (before, box, other) == (plain[0], plain[4], plain[5])
    assert read == appended == indexed == (2.5, "a")


@pytest.mark.parametrize("index", [0, 2, -1, -3, 3, -4, 10**30, True])
def test_element_access_of_a_list_without_a_record_is_what_python_does(index):
    """Reads and writes of a list the bindings cache knows nothing of are
    done in the core: the same element, the same error for any index."""

    def program(xs, i):
        outcome = []
        for attempt in (lambda: xs[i], lambda: xs.__setitem__(i, 7.0),
                        lambda: xs.__getitem__(i)):
            try:
                outcome.append(attempt())
            except Exception as error:
                outcome.append((type(error).__name__, str(error)))
        try:
            xs[i] = 9.0
        except Exception as error:
            outcome.append((type(error).__name__, str(error)))
        outcome.append(list(xs))
        return outcome

    plain = program([1.0, 2.0, 3.0], index)
    ctx = new_context()
    assert overdub(ctx, program, [1.0, 2.0, 3.0], index) == plain
    assert len(ctx.bindingscache) == 0


def test_operators_of_plain_operands_under_tagging_are_the_plain_operators():
    """Under tagging an operation on values without metadata runs the C
    function behind the operator: results, reflected methods, in-place
    updates of mutable operands and errors are those of plain Python."""

    class Reflected:
        def __rsub__(self, other):
            return ("rsub", other)

        def __lt__(self, other):
            return ("lt", other)

    def program(a, b, items):
        outcome = [a + b, a - b, a * b, a / b, a // b, a % b, a ** b, a << 2, a >> 1,
                   a & b, a | b, a ^ b, a < b, a <= b, a == b, a != b, a > b, a >= b,
                   1.5 - Reflected(), Reflected() < 3, items[1]]
        grown = items
        grown += [a]
        outcome.append(grown is items)
        for bad in (lambda: a / 0, lambda: a + "x", lambda: items[a * 10]):
            try:
                bad()
            except Exception as error:
                outcome.append((type(error).__name__, str(error)))
        return outcome, items

    plain = program(7, 3, [1, 2])
    ctx = new_context()
    assert overdub(ctx, program, 7, 3, [1, 2]) == plain


def test_more_recorded_objects_than_a_sweep_waits_for_keep_their_metadata():
    """Past the bindings cache's sweep threshold, records of objects held
    weakly (instances with tagged attributes) and strongly (lists) that
    the program still holds survive the sweep; the lists it dropped go."""

    class Box:
        pass

    boxes = [Box() for _ in range(1500)]
    kept = []

    def fill(a):
        for box in boxes:
            box.value = a
        for i in range(1500):
            row = [a, float(i)]
            if i % 100 == 0:
                kept.append(row)
        return [labelled(ctx, v)
                for v in (boxes[0].value, boxes[-1].value, kept[0][0], kept[-1][0])]

    ctx = new_context()
    assert overdub(ctx, fill, tag(1.0, ctx, "a")) == [(1.0, "a")] * 4
    assert all(box.value == 1.0 for box in boxes)
    assert [[m.data for m in metameta(row, ctx)] for row in kept] == [["a", NoMetaData]] * 15
    assert len(ctx.bindingscache) < 1500 + 1024


# -- sets: metadata of the very element the set holds ----------------------------------

class LabelsCounted(Labels):
    """Labels, and a prehook: every operator site is rewritten, so ``|``,
    ``&``, ``-``, ``^`` reach the fallback too."""

    def prehook(self, f, *args, **kwargs):
        self.metadata.append(1)


def set_operations(a, b, c, a_again):
    """Sets made and changed every way a program does; ``a_again`` equals
    ``a`` and is another object."""
    x, y = {a, b}, {b, c}
    popped_from_display = {a}.pop()
    added = set()
    added.add(a)
    added.add(b)
    added.discard(b)
    kept_first = {a}
    kept_first.add(a_again)          # the set keeps ``a``, and its metadata
    updated = {b}
    updated.update([a, c])
    from_generator = set()
    from_generator.update(v for v in (a, c))
    changed = set(x)
    changed |= {c}
    changed -= {b}
    emptied = {a, b}
    emptied.clear()
    emptied.add(b)
    return {
        "display": x, "constructor": set([a, b]), "comprehension": {v for v in (b, c)},
        "add": added, "add_equal": kept_first, "update": updated,
        "update_generator": from_generator, "in_place": changed, "cleared": emptied,
        "union": x.union([c]), "intersection": x.intersection(y), "difference": x.difference(y),
        "or": x | y, "and": x & y, "sub": x - y, "xor": x ^ y,
        "frozenset": frozenset(v for v in (a, b)), "frozenset_of_set": frozenset(x),
        "sorted": sorted(x), "popped": [popped_from_display],
        "iterated": sorted(v for v in x),
    }


#: What each container's elements carry (``NoMetaMeta``: nothing).
SET_LABELS = {
    "display": {1.5: "a", 2.5: "b"}, "constructor": {1.5: "a", 2.5: "b"},
    "comprehension": {2.5: "b", 3.5: "c"}, "add": {1.5: "a"}, "add_equal": {1.5: "a"},
    "update": {1.5: "a", 2.5: "b", 3.5: "c"}, "update_generator": {1.5: "a", 3.5: "c"},
    "in_place": {1.5: "a", 3.5: "c"}, "cleared": {2.5: "b"},
    "union": {1.5: "a", 2.5: "b", 3.5: "c"}, "intersection": {2.5: "b"},
    "difference": {1.5: "a"}, "or": {1.5: "a", 2.5: "b", 3.5: "c"}, "and": {2.5: "b"},
    "sub": {1.5: "a"}, "xor": {1.5: "a", 3.5: "c"},
    "frozenset": {1.5: "a", 2.5: "b"}, "frozenset_of_set": {1.5: "a", 2.5: "b"},
    "sorted": ["a", "b"], "popped": ["a"], "iterated": ["a", "b"],
}
#: What differs under a context without a handler an operator could match:
#: it leaves operators to the interpreter (their sites are not rewritten,
#: reference §3.1), so ``x | y`` makes a set whose elements carry nothing,
#: and ``changed |= {c}`` adds ``c`` without its metadata.
WITHOUT_OPERATOR_SITES = {"or": NoMetaMeta, "and": NoMetaMeta, "sub": NoMetaMeta,
                          "xor": NoMetaMeta, "in_place": {1.5: "a"}}


def _labels_of(meta):
    if meta is NoMetaMeta:
        return NoMetaMeta
    if isinstance(meta, dict):
        return {key: m.data for key, m in meta.items()}
    return [m.data for m in meta]


@pytest.mark.parametrize("kind", [Labels, LabelsCounted])
def test_a_sets_elements_keep_their_metadata(kind):
    """reference §6 for sets: each element carries the metadata of the
    value stored — through displays, ``set()``/``frozenset()``,
    comprehensions, ``add``, ``update``, in-place and binary operators,
    ``union`` …, iteration, ``sorted`` and ``pop`` — while the sets hold
    primal values; of equal values a set keeps the one it had, and that
    one's metadata (``{a}.add(a_again)``)."""
    values = (1.5, 2.5, 3.5, float("1.5"))
    plain = set_operations(*values)
    ctx = enabletagging(kind(metadata=[]), labelled)
    out = overdub(ctx, set_operations, tag(values[0], ctx, "a"), tag(values[1], ctx, "b"),
                  tag(values[2], ctx, "c"), tag(values[3], ctx, "a again"))
    assert out == plain
    assert_primal_only(out)
    assert {name: type(value) for name, value in out.items()} == {
        name: type(value) for name, value in plain.items()}
    expected = dict(SET_LABELS)
    if kind is Labels:
        expected.update(WITHOUT_OPERATOR_SITES)
    assert {name: _labels_of(metameta(value, ctx)) for name, value in out.items()} == expected


def popped_label(v):
    return metadata({v}.pop(), run_pop), metadata([v].pop(), run_pop)


run_pop = enabletagging(Labels(), popped_label)


def test_what_a_set_pops_carries_its_metadata_as_a_lists_does():
    assert overdub(run_pop, popped_label, tag(2.5, run_pop, "v")) == ("v", "v")


def pops_inside(a):
    as_set, as_list = {a}, [a]
    from_set, from_list = as_set.pop(), as_list.pop()
    return (metadata(from_set, run_inner_pops), metadata(from_list, run_inner_pops)), from_set, from_list


def pops_outside(a):
    inner, from_set, from_list = overdub(run_inner_pops, pops_inside,
                                         tag(a, run_inner_pops, "inner"))
    return inner, metadata(from_set, run_outer_pops), metadata(from_list, run_outer_pops)


run_inner_pops = enabletagging(Labels(), pops_inside)
run_outer_pops = enabletagging(Labels(), pops_outside)


def test_a_set_pops_each_nested_contexts_metadata():
    """Under nested tagging contexts, the element a set pops carries each
    context's own metadata, as a list's does."""
    assert overdub(run_outer_pops, pops_outside, tag(2.5, run_outer_pops, "outer")) == (
        ("inner", "inner"), "outer", "outer")


def test_a_dunder_called_by_name_on_a_tagged_value_is_its_primal_method():
    """``t.__add__(1.0)``: 3.13+ load it as Tagged's own method; it is the
    call of ``float.__add__`` with the tagged value first, as on 3.11 and
    3.12 (it raised AttributeError there before)."""
    seen = []

    class Seeing(Labels):
        pass

    @cassette.prehook.register(Seeing, float.__add__)
    def _(ctx, f, *args):
        seen.append((f, [istagged(a, ctx) for a in args]))

    def f(t):
        return t.__add__(1.0), t.__neg__(), t.__lt__(5.0), t.__round__(), t.__radd__(2.0)

    ctx = enabletagging(Seeing(), f)
    assert overdub(ctx, f, tag(2.0, ctx, "t")) == (3.0, -2.0, True, 2, 4.0)
    assert seen == [(float.__add__, [True, False])]
    assert f(2.0) == (3.0, -2.0, True, 2, 4.0)
