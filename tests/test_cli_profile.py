"""``python -m cassette profile``: its counts against independent ones.

Call counts are compared with ``sys.setprofile``'s on the same script
(:func:`cli_support.setprofile_calls`); the operation mix with a program
whose operations are counted by hand in the test; times with what must hold
of any profile (exclusive within inclusive, children within parents).
"""

import json
import sys

import pytest

from cli_support import run, setprofile_calls, write

CALLS = """
    import sys

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    class Account:
        def __init__(self, balance):
            self.balance = balance

        def deposit(self, amount):
            self.balance = self.balance + amount
            return self.balance

    def parse(text):
        try:
            return int(text)
        except ValueError:
            return None

    def main(n):
        account = Account(0)
        for k in range(n):
            account.deposit(fib(k))
        values = [parse(t) for t in ("1", "x", "3", "y")]
        return account.balance, values

    if __name__ == "__main__":
        print(main(int(sys.argv[1])))
"""


def profile_json(tmp_path, script, *args, options=()):
    out = tmp_path / "profile.json"
    code, stdout, stderr = run(["-m", "cassette", "profile", *options, "--format", "json",
                                "-o", str(out), str(script), *args], tmp_path)
    assert code == 0, stderr
    return json.loads(out.read_text()), stdout


@pytest.mark.parametrize("options", [(), ("--no-ops",)])
def test_call_counts_match_setprofile(tmp_path, options):
    script = write(tmp_path, "calls.py", CALLS)
    expected = setprofile_calls(script, tmp_path, "10")
    expected.pop("Account", None)                # the class body: no call in the source
    if sys.version_info < (3, 12):
        expected.pop("main.<locals>.<listcomp>", None)   # 3.11's comprehension function
    assert expected["fib"] == 276       # fib(k) makes 2 fib(k + 1) - 1 calls; k < 10
    profile, stdout = profile_json(tmp_path, script, "10", options=options)
    assert stdout == "(88, [1, None, 3, None])\n"
    seen = {row["name"]: row["calls"] for row in profile["functions"]
            if row["file"] == str(script)}
    assert seen == expected
    builtins = {row["name"]: row["calls"] for row in profile["functions"] if row["file"] is None}
    assert builtins["int"] == 5 and builtins["range"] == 1 and builtins["Account"] == 1


def test_times_are_consistent(tmp_path):
    script = write(tmp_path, "calls.py", CALLS)
    profile, _ = profile_json(tmp_path, script, "15")

    def check(node):
        assert node["self"] <= node["value"] + 1e-9
        assert sum(child["value"] for child in node["children"]) <= node["value"] + 1e-6
        for child in node["children"]:
            check(child)

    tree = profile["tree"]
    assert tree["name"] == "calls.py"
    check(tree)
    rows = {row["name"]: row for row in profile["functions"]}
    # fib is recursive: its cumtime counts each outermost call once, so it is
    # at most main's, and its tottime at most its cumtime.
    assert rows["fib"]["tottime"] <= rows["fib"]["cumtime"] <= rows["main"]["cumtime"]
    assert rows["main"]["cumtime"] <= profile["wall_time"]


OPERATIONS = """
    class Body:
        def __init__(self, x):
            self.x = x

    def step(bodies, dt):
        for b in bodies:
            b.x = b.x * dt + 1.0

    bodies = [Body(1.0), Body(2.0)]
    step(bodies, 0.5)
    step(bodies, 0.5)
    print(bodies[0].x, bodies[1].x)
"""


def test_operation_mix_counted_by_hand(tmp_path):
    """Per ``step`` call, over two bodies: ``iter(list)`` once, ``next`` three
    times (the exhausting step included), and per body ``getattr(Body, 'x')``,
    ``operator.mul(float, float)``, ``operator.add(float, float)``,
    ``setattr(Body, 'x')``; two calls.  ``Body.__init__``: one ``setattr``
    each, two calls.  The module body: ``bodies[0]``, ``bodies[1]`` and their
    ``.x``."""
    script = write(tmp_path, "ops.py", OPERATIONS)
    profile, stdout = profile_json(tmp_path, script)
    assert stdout == "1.75 2.0\n"
    rows = {row["name"]: row for row in profile["functions"]}
    assert rows["step"]["ops"] == {
        "next(list_iterator)": 6, "getattr(Body, 'x')": 4, "operator.add(float, float)": 4,
        "operator.mul(float, float)": 4, "setattr(Body, 'x')": 4, "iter(list)": 2}
    assert rows["Body.__init__"]["ops"] == {"setattr(Body, 'x')": 2}
    assert profile["ops"] == {
        "setattr(Body, 'x')": 6, "getattr(Body, 'x')": 6, "next(list_iterator)": 6,
        "operator.add(float, float)": 4, "operator.mul(float, float)": 4,
        "operator.getitem(list, int)": 2, "iter(list)": 2}
    tree_step = [c for c in profile["tree"]["children"] if c["name"] == "step"]
    assert len(tree_step) == 1 and tree_step[0]["calls"] == 2
    assert tree_step[0]["ops"] == rows["step"]["ops"]


def test_no_ops_counts_none(tmp_path):
    script = write(tmp_path, "ops.py", OPERATIONS)
    profile, _ = profile_json(tmp_path, script, options=("--no-ops",))
    assert profile["ops"] == {}
    assert {row["name"]: row["calls"] for row in profile["functions"]} == {
        "step": 2, "Body": 2, "Body.__init__": 2, "object.__new__": 2, "__build_class__": 1,
        "print": 1}


def test_text_report(tmp_path):
    script = write(tmp_path, "ops.py", OPERATIONS)
    code, out, err = run(["-m", "cassette", "profile", "-s", "calls", str(script)], tmp_path)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "1.75 2.0"
    assert lines[1].strip().startswith("10 function calls in")
    assert "Ordered by: call count" in out
    header = lines.index("   ncalls  tottime  percall  cumtime  percall filename:lineno(function)")
    table = [line.split() for line in lines[header + 1:header + 7]]
    assert [(row[0], row[-1]) for row in table] == [
        ("2", "{Body}"), ("2", "ops.py:3(Body.__init__)"), ("2", "{object.__new__}"),
        ("2", "ops.py:6(step)"), ("1", "{__build_class__}"), ("1", "{print}")]
    assert "   Operation mix: 30 operations" in lines
    assert "        6  setattr(Body, 'x')" in lines


def test_sort_orders(tmp_path):
    script = write(tmp_path, "calls.py", CALLS)
    for key, field, reverse in (("calls", "calls", True), ("tottime", "tottime", True),
                                ("cumtime", "cumtime", True), ("name", "name", False)):
        out = tmp_path / "p.json"
        code, _, err = run(["-m", "cassette", "profile", "-s", key, "--format", "json",
                            "-o", str(out), str(script), "6"], tmp_path)
        assert code == 0, err
        values = [row[field] for row in json.loads(out.read_text())["functions"]]
        assert values == sorted(values, reverse=reverse), key


def test_chrome_and_speedscope(tmp_path):
    script = write(tmp_path, "calls.py", CALLS)
    profile, _ = profile_json(tmp_path, script, "8")
    chrome = tmp_path / "trace.json"
    code, _, err = run(["-m", "cassette", "profile", "--format", "chrome", "-o", str(chrome),
                        str(script), "8"], tmp_path)
    assert code == 0, err
    events = json.loads(chrome.read_text())["traceEvents"]
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    by_name = {}
    for event in events:
        by_name[event["name"]] = by_name.get(event["name"], 0) + event["args"]["calls"]
    rows = {row["name"]: row["calls"] for row in profile["functions"]}
    assert by_name["fib"] == rows["fib"] and by_name["Account.deposit"] == 8

    scope = tmp_path / "scope.json"
    code, _, err = run(["-m", "cassette", "profile", "--format", "speedscope", "-o",
                        str(scope), str(script), "8"], tmp_path)
    assert code == 0, err
    document = json.loads(scope.read_text())
    frames = [frame["name"] for frame in document["shared"]["frames"]]
    assert frames[0] == "calls.py" and "fib" in frames and "Account.deposit" in frames
    (prof,) = document["profiles"]
    assert prof["type"] == "sampled" and len(prof["samples"]) == len(prof["weights"])
    assert all(0 <= index < len(frames) for sample in prof["samples"] for index in sample)


def test_flame_graph_tree(tmp_path):
    """The tree handed to the flame graph renderer has the interface's shape."""
    script = write(tmp_path, "ops.py", OPERATIONS)
    profile, _ = profile_json(tmp_path, script)

    def check(node):
        assert set(node) == {"name", "file", "line", "value", "self", "calls", "ops", "children"}
        assert isinstance(node["name"], str) and isinstance(node["calls"], int)
        assert all(isinstance(count, int) for count in node["ops"].values())
        for child in node["children"]:
            check(child)

    check(profile["tree"])


def test_tree_merges_callees_of_one_site(tmp_path):
    """Closures of one function are one node per path: make() returns a new
    closure each time, and each is called once from the same place."""
    script = write(tmp_path, "closures.py", """
        def make(k):
            def add(x):
                return x + k
            return add

        total = 0
        for k in range(5):
            total = make(k)(total)
        print(total)
    """)
    profile, stdout = profile_json(tmp_path, script)
    assert stdout == "10\n"
    adds = [c for c in profile["tree"]["children"] if c["name"] == "make.<locals>.add"]
    assert len(adds) == 1 and adds[0]["calls"] == 5
    assert adds[0]["ops"] == {"operator.add(int, int)": 5}


def test_html_flame_graph(tmp_path):
    script = write(tmp_path, "ops.py", OPERATIONS)
    page = tmp_path / "prof.html"
    code, out, err = run(["-m", "cassette", "profile", "--format", "html", "-o", str(page),
                          str(script)], tmp_path)
    assert (code, out, err) == (0, "1.75 2.0\n", "")
    html = page.read_text()
    assert html.lstrip().lower().startswith("<!doctype html") and "step" in html
    assert "http://" not in html and "https://" not in html


@pytest.mark.parametrize("format", ["text", "json", "chrome", "speedscope"])
def test_deep_recursion(tmp_path, format):
    """A program that recurses 600 levels deep is reported in every format:
    the report's own walk of the tree (json's encoder takes two frames a
    level) has room under a raised limit."""
    script = write(tmp_path, "deep.py", """
        import sys
        def down(n):
            return 0 if n == 0 else 1 + down(n - 1)
        print(down(int(sys.argv[1])))
    """)
    out = tmp_path / "deep.out"
    code, stdout, stderr = run(["-m", "cassette", "profile", "--format", format, "-o", str(out),
                                str(script), "600"], tmp_path)
    assert (code, stdout, stderr) == (0, "600\n", "")
    if format == "json":
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(10_000)           # json's decoder nests a level per call
        try:
            document = json.loads(out.read_text())
        finally:
            sys.setrecursionlimit(limit)
        rows = {row["name"]: row for row in document["functions"]}
        assert rows["down"]["calls"] == 601


def test_threads_have_their_own_tree(tmp_path):
    """A thread's calls hang under a node of its own, named after it: work
    runs once, in worker-0, under Thread.run."""
    script = write(tmp_path, "thr.py", """
        import threading
        def work(i):
            return sum(k for k in range(i))
        t = threading.Thread(target=work, args=(3,), name="worker-0")
        t.start()
        t.join()
    """)
    profile, _ = profile_json(tmp_path, script, options=("--no-ops",))
    (thread,) = [c for c in profile["tree"]["children"] if c["name"] == "<thread worker-0>"]

    def paths(node, prefix=()):
        here = prefix + (node["name"],)
        yield here, node
        for child in node["children"]:
            yield from paths(child, here)

    works = [(path, node) for path, node in paths(thread) if path[-1] == "work"]
    assert len(works) == 1 and works[0][1]["calls"] == 1
    assert works[0][0][-2] == "threading.Thread.run"
    rows = {row["name"]: row["calls"] for row in profile["functions"]}
    assert rows["work"] == 1 and rows["threading.Thread.start"] == 1


INSTANCES = """
    import functools

    import numpy as np

    class Dispatchable:
        # networkx's pattern: an instance standing for the function it wraps
        def __init__(self, func):
            self.func = func
            self.__name__ = func.__name__
            self.__qualname__ = func.__qualname__

        def __call__(self, *args):
            return self.func(*args)

    class Opaque:
        @property
        def __dict__(self):
            raise AssertionError("the report ran the program's code")

        def __call__(self):
            return 1

    def degree(values):
        return len(values)

    degree = Dispatchable(degree)
    scaled = functools.partial(np.multiply, 2.0)
    x = np.arange(4.0)
    print(np.sum(x), np.mean(x), scaled(x).tolist(), degree([1, 2]), Opaque()())
"""


def test_callable_instances_are_named_by_their_own_names(tmp_path):
    """numpy's functions, a partial and an instance with __name__ get rows
    of their own names (before: all '<_ArrayFunctionDispatcher instance>',
    '<partial instance>'); an instance whose __dict__ is the program's own
    property is not read."""
    pytest.importorskip("numpy")
    script = write(tmp_path, "instances.py", INSTANCES)
    profile, stdout = profile_json(tmp_path, script)
    assert stdout == "6.0 1.5 [0.0, 2.0, 4.0, 6.0] 2 1\n"
    names = {row["name"]: row["calls"] for row in profile["functions"]}
    assert names["numpy.sum"] == 1 and names["numpy.mean"] == 1
    assert names["partial(numpy.multiply)"] == 1 and names["numpy.multiply"] == 1
    assert names["degree"] == 1 and names["<Opaque instance>"] == 1
    assert not any(name.startswith("<_ArrayFunctionDispatcher") for name in names)


def test_limit_include_and_exclude(tmp_path):
    """Issue 38, item 7: --limit shows the first rows, --include/--exclude
    choose them by name or file (the header still counts every call)."""
    script = write(tmp_path, "calls.py", CALLS)
    full, _ = profile_json(tmp_path, script, "10")
    total = sum(row["calls"] for row in full["functions"])
    code, out, err = run(["-m", "cassette", "profile", "--sort", "calls", "--limit", "2",
                          str(script), "10"], tmp_path)
    assert code == 0 and err == ""
    table = out.split("filename:lineno(function)\n")[1].split("\n\n")[0].splitlines()
    by_calls = sorted(full["functions"], key=lambda row: -row["calls"])
    assert len(table) == 2 and table[0].split()[0] == str(by_calls[0]["calls"])
    assert f"{total} function calls in" in out
    only, _ = profile_json(tmp_path, script, "10", options=("--include", "*calls.py"))
    assert {row["name"] for row in only["functions"]} == {
        row["name"] for row in full["functions"] if row["file"] == str(script)}
    without, _ = profile_json(tmp_path, script, "10", options=("--exclude", "fib",
                                                               "--exclude", "Account*"))
    assert {row["name"] for row in without["functions"]} == {
        row["name"] for row in full["functions"]} - {"fib", "Account", "Account.__init__",
                                                     "Account.deposit"}


GENERATORS = """
    import math

    def squares(n):
        for i in range(n):
            total = 0.0
            for k in range(120):
                total += math.sqrt(i + k)
            yield total

    def consume():
        listed = list(squares(300))
        looped = 0.0
        for value in squares(300):
            looped += abs(value)
        summed = sum(squares(300))
        return round(listed[-1] + looped + summed, 3)

    print(consume())
"""


def test_a_generators_runs_are_its_own_time(tmp_path):
    script = write(tmp_path, "generators.py", GENERATORS)
    _, plain, _ = run([str(script)], tmp_path)
    profile, stdout = profile_json(tmp_path, script, options=("--no-ops",))
    assert stdout == plain
    rows = {row["name"]: row for row in profile["functions"]}
    squares, consume = rows["squares"], rows["consume"]
    assert squares["calls"] == 3                # its function's calls, not its resumptions
    assert rows["math.sqrt"]["calls"] == 3 * 300 * 120
    # The body's time is the generator's: its consumers (list, sum, the loop
    # of consume) keep little of it.  (Enough work that a few milliseconds
    # of another process's time slice, wherever they land, change nothing.)
    assert squares["cumtime"] >= 0.8 * consume["cumtime"]
    for consumer in ("list", "sum", "consume"):
        assert rows[consumer]["tottime"] < 0.2 * squares["cumtime"], consumer

    def nodes(tree, name):
        found = [tree] if tree["name"] == name else []
        for child in tree["children"]:
            found += nodes(child, name)
        return found

    # In the tree each run sits under whoever resumed it.
    parents = {}

    def walk(tree):
        for child in tree["children"]:
            if child["name"] == "squares":
                parents[tree["name"]] = parents.get(tree["name"], 0) + 1
            walk(child)

    walk(profile["tree"])
    assert {"list", "sum", "consume"} <= set(parents)
    assert sum(node["calls"] for node in nodes(profile["tree"], "math.sqrt")) == 3 * 300 * 120


JSON_ROUND_TRIP = """
    import io, json
    data = {"items": [{"id": i, "name": f"item{i}", "tags": ["a", str(i)], "v": i * 0.5,
                       "nested": {"x": [i, {"y": None}]}} for i in range(1500)]}
    out = io.StringIO()
    json.dump(data, out, indent=2)       # streams: json's Python generators, on every release
    assert json.loads(out.getvalue()) == data
    print(len(out.getvalue()))
"""


def test_json_encoders_generators_get_the_time_cprofile_gives_them(tmp_path):
    """json's streaming encoder is a tree of generators (``json.dump``
    consumes them): the time is theirs, not their consumer's, as cProfile
    sees it — at least the share cProfile gives them.  (More: the hooks
    cost about three times cProfile's per call, and the calls made while a
    generator's run is open — its own, and ``dump``'s ``write`` of each
    chunk just after it yields — lend it that cost; 3.13 measured 0.81-0.88
    against cProfile's 0.54-0.57.)"""
    script = write(tmp_path, "round_trip.py", JSON_ROUND_TRIP)
    stats = tmp_path / "cprofile.out"
    code, plain, err = run(["-m", "cProfile", "-o", str(stats), str(script)], tmp_path)
    assert code == 0, err
    import pstats
    by_name = {}
    for (file, _line, name), row in pstats.Stats(str(stats)).stats.items():
        by_name[(file.endswith("encoder.py"), name)] = by_name.get(
            (file.endswith("encoder.py"), name), 0.0) + row[2]
    total = sum(by_name.values())
    generators = ("_iterencode", "_iterencode_dict", "_iterencode_list")
    expected = sum(by_name.get((True, name), 0.0) for name in generators) / total
    profile, stdout = profile_json(tmp_path, script, options=("--no-ops",))
    assert stdout == plain
    rows = profile["functions"]
    measured = sum(row["tottime"] for row in rows
                   if row["name"].rpartition(".")[2] in generators) / sum(
                       row["tottime"] for row in rows)
    # The generators take most of the run as cProfile sees it: 0.54-0.57 on
    # 3.13, 0.49 on 3.15 beside another test run (cProfile's own cost
    # varies with the load; the check is of the workload, not of cassette).
    assert expected > 0.4
    assert measured >= expected - 0.10, (measured, expected)
    dump = next(row for row in rows if row["name"] == "json.dump")
    assert dump["tottime"] < 0.05 * sum(row["tottime"] for row in rows)

    def depth(tree):
        return 1 + max((depth(child) for child in tree["children"]), default=0)

    # The runs of generators that ended end in the tree too: it is as deep as
    # the data (a dozen levels), not as long as the run.
    assert depth(profile["tree"]) < 30


MAKE_AND_ENCODE = """
    import json, random

    def make_item(rng, i):
        return {"id": i, "name": "item%d" % i, "tags": [rng.choice("abc") for _ in range(3)],
                "value": rng.random(), "nested": {"x": [rng.randint(0, 9) for _ in range(4)]}}

    def make(n):
        rng = random.Random(1)
        return [make_item(rng, i) for i in range(n)]

    data = make(3000)
    for _ in range(4):
        text = json.dumps(data)
        back = json.loads(text)
    print(len(text), back == data)
"""


@pytest.mark.parametrize("options", [(), ("--no-ops",)])
def test_calibration_takes_the_hooks_cost_out_of_python_calls(tmp_path, options):
    """Many small Python calls (``make``) beside C code (json's encoder and
    decoder): the hooks' cost lands on the Python calls; calibrated, the
    report takes out what the calibration measured, and says how much."""
    script = write(tmp_path, "make_and_encode.py", MAKE_AND_ENCODE)
    _, plain, _ = run([str(script)], tmp_path)
    for calibrate in ("--calibrate", "--no-calibrate"):
        profile, stdout = profile_json(tmp_path, script, options=(*options, calibrate))
        assert stdout == plain
        costs = profile["calibration"]
        if calibrate == "--no-calibrate":
            assert costs is None
        else:
            assert 0 < costs["function_outside"] < 1e-4 and 0 < costs["other_outside"] < 1e-4
            assert (costs["operation"] > 0) == (options == ())
        rows = {row["name"]: row for row in profile["functions"]}
        calls = sum(row["calls"] for row in profile["functions"])
        tree = profile["tree"]
        if costs is None:
            assert tree["value"] == profile["wall_time"]
        else:
            # What was taken out: at least the cheapest of the per-call
            # costs for each call (make's are most of them), at most all.
            taken = profile["wall_time"] - tree["value"]
            cheapest = min(costs["function_outside"], costs["other_outside"])
            assert 0.5 * cheapest * calls <= taken < profile["wall_time"], (taken, calls)

        def check(node):
            assert 0 <= node["self"] <= node["value"] + 1e-9
            assert sum(child["value"] for child in node["children"]) <= node["value"] + 1e-6
            for child in node["children"]:
                check(child)

        check(tree)


def test_calibration_subtracts_what_it_measured():
    """The arithmetic of ``Costs.subtract`` on a tree made by hand: a
    function called twice that called a builtin four times and counted
    ten operations."""
    from cassette.cli.profile import Costs, Node

    def function():
        pass

    root, caller, callee = Node(None), Node(function), Node(len)
    root.children[1], caller.children[2] = caller, callee
    caller.calls, caller.total, caller.ops = 2, 1.0, {"op": 10}
    callee.calls, callee.total = 4, 0.5
    root.total = 1.5
    costs = Costs(function_inside=0.01, function_outside=0.02, other_inside=0.03,
                  other_outside=0.04, operation=0.005)
    costs.subtract(root)
    # callee: its own 0.5 less 4 calls inside (0.12)
    assert callee.total == pytest.approx(0.38)
    # caller: own 0.5, less 4 calls outside (0.16), 2 inside (0.02), 10 ops (0.05)
    assert caller.total == pytest.approx(0.27 + 0.38)
    # root: own 0.5 less 2 calls outside (0.04)
    assert root.total == pytest.approx(0.46 + 0.65)
    assert caller.self_time() == pytest.approx(0.27) and callee.self_time() == pytest.approx(0.38)
    costs = Costs(1.0, 1.0, 1.0, 1.0, 1.0)          # more than was measured: never below zero
    costs.subtract(root)
    assert root.total == caller.total == callee.total == 0.0
