"""``python -m cassette profile``: where the time goes, and what the code does.

Every call the program makes — to Python functions, builtins, classes — is
timed between its ``prehook`` and its ``posthook`` and merged into a tree of
call paths (a node per callee under the same parent; recursion makes a
deeper node).  With the operation mix on (the default), every other
operation of reference §3.1 is counted in the node of the function that
made it, by callee and operand types: ``operator.mul(float, float)``,
``getattr(Body, 'x')``.  Operations are counted, not timed: their time is
their function's own.

The reports, all made from that tree at the end of the run:

* ``text`` — the per-function table of ``cProfile`` (``ncalls``,
  ``tottime``, ``percall``, ``cumtime``, ``percall``, sorted by ``-s``),
  then the operation mix in total and per function;
* ``json`` — the table, the mix and the tree;
* ``chrome`` — Chrome's trace-event format (open it in Perfetto or
  ``chrome://tracing``): one complete event per call path, laid out in
  time order;
* ``speedscope`` — speedscope's file format, a "sampled" profile of the
  call paths weighted by their exclusive time;
* ``html`` — a self-contained flame graph page.

A function's ``cumtime`` counts each of its calls once, also when it is
recursive (the outermost call's time), as ``cProfile`` does.

A generator's (or coroutine's) body runs when it is resumed, not when its
function is called: each run from a resumption to the next suspension is
charged to the generator's own row, in the tree under whoever resumed it
(``list``, a ``for`` loop's function, the event loop), as pyinstrument
shows it.  Its ``ncalls`` are the calls of its function; the resumptions
add time, not calls.  Rows are keyed as ``cProfile`` keys them: a
function's file, first line and qualified name.

The hooks' own cost lands in the times of Python code that makes many calls
(C code makes none the hooks see).  ``--calibrate`` measures it first, on
loops of known work (:func:`calibrate`, as ``profile.Profile.calibrate``
does), and takes it out of each function's own time, never below zero.  It
is an estimate — real calls cost the hooks up to twice what the loops
measure — so it is off by default, and the report says what it took out.
"""

import fnmatch
import json
import operator
import os
import sys
import time
import types

import cassette
from cassette.callables import SUSPENDING

from . import callstack
from .callstack import program_frame
from .describe import (OPERATIONS, callee_key, callee_name, callee_site, code_name,
                       operation_name)

_getframe = sys._getframe
_perf_counter = time.perf_counter
_FunctionType = types.FunctionType

# Profile entries: [callee, caller frame, caller's f_lasti, node, start time]
# (the hooks index them with the literals, which is faster); the entry of a
# generator's run holds its frame as the callee and has a sixth field.
NODE, START = 3, 4
_RESUMED = "resumed"
_SUSPENDS = SUSPENDING               # code run by resuming
_HOOKED_DIRECTLY = program_frame is callstack.identity

SORT_KEYS = {
    "calls": lambda row: (-row.calls, row.name),
    "tottime": lambda row: (-row.self_time, row.name),
    "cumtime": lambda row: (-row.total, row.name),
    "name": lambda row: (row.name, row.file or "", row.line or 0),
}


class Node:
    """One call path: the callee, how often it was called along this path,
    the time spent in those calls, and the operations they made."""

    __slots__ = ("callee", "calls", "total", "children", "ops")

    def __init__(self, callee):
        self.callee = callee
        self.calls = 0
        self.total = 0.0
        self.children = {}          # describe.callee_key(callee) -> Node
        self.ops = {}               # operation key -> count

    def self_time(self):
        return self.total - sum(child.total for child in self.children.values())


class Resumed:
    """The callee of a generator's (or coroutine's) runs: its code and the
    module it runs in (named as its function is)."""

    __slots__ = ("code", "module")

    def __init__(self, frame):
        self.code = frame.f_code
        name = frame.f_globals.get("__name__")
        self.module = name if type(name) is str else None


class ProfileRecording(callstack.Recording):
    """A thread's part of the profile: the tree under its root node."""

    def __init__(self, session, thread_name):
        self.root = Node(None)
        self.ops = self.root.ops        # the operation counts of the innermost open call
        super().__init__(session, thread_name, [None, None, -1, self.root, _perf_counter()])

    def release(self):
        super().release()
        self.root.children.clear()      # (a thread's lane shares the dict)

    def for_thread(self, name):
        recording = ProfileRecording(self.session, name)
        self.session.threads.append(recording)
        return recording

    def close(self, entry, raised, now=None):
        node = entry[NODE]
        if len(entry) == 5:         # a call (a generator's run adds no call)
            node.calls += 1
        node.total += (_perf_counter() if now is None else now) - entry[START]
        self.ops = self.stack[-1][NODE].ops

    def resumed(self, frame):
        """Generator or coroutine ``frame`` makes an operation while the top
        entry is neither its run's nor one it made.  If an entry of its is
        open below, the frame is running again: everything above that entry
        has ended (returned, or suspended without a later operation of its
        resumer to tell); they are closed.  Else the frame was resumed: open
        an entry for this run (the frame as the callee), made by its
        resumer's frame at the instruction it is at — so the resumer's next
        instruction, or the end of the call that resumed it
        (``list(...)``), closes it.  Returns the new top."""
        stack = self.stack
        for index in range(len(stack) - 1, 0, -1):
            entry = stack[index]
            if entry[0] is frame or entry[1] is frame:
                while len(stack) - 1 > index:
                    self.close(stack.pop(), False)
                if entry[1] is frame and entry[2] != frame.f_lasti:
                    return self.settle(frame)
                return entry
        resumer = frame.f_back
        top = stack[-1]
        children = top[NODE].children
        node = children.get(frame.f_code)
        if node is None:
            node = children[frame.f_code] = Node(Resumed(frame))
        entry = [frame, resumer, -1 if resumer is None else resumer.f_lasti, node,
                 _perf_counter(), _RESUMED]
        stack.append(entry)
        return entry


class ProfileSession(callstack.Session):
    def __init__(self):
        super().__init__()
        self.threads = []
        self.main = self.add(ProfileRecording(self, "MainThread"))
        #: The instrumentation's measured costs (:func:`calibrate`), or None.
        self.costs = None


class Profiler(callstack.ToolContext):
    """Times every call; ``metadata`` is the thread's :class:`ProfileRecording`."""

    intercept = cassette.Intercept.CALLS

    def prehook(self, f, /, *args, **kwargs):
        recording = self.metadata
        stack = recording.stack
        caller = _getframe(1) if _HOOKED_DIRECTLY else program_frame(_getframe(1))
        top = stack[-1]
        if top[1] is caller:
            if top[2] != caller.f_lasti:
                top = recording.settle(caller)
        elif (top[0] is not caller
              # Not the body of the call on top (reading f_code raises an
              # audit event: only when it may be a generator's run).
              and (caller.f_back is not top[1] or type(top[0]) is not _FunctionType)
              and caller.f_code.co_flags & _SUSPENDS):
            top = recording.resumed(caller)
        children = top[3].children
        node = children.get(f.__code__ if type(f) is _FunctionType else id(f))
        if node is None:
            node = _node_of(children, f)
        recording.ops = node.ops
        stack.append([f, caller, caller.f_lasti, node, _perf_counter()])

    def posthook(self, output, f, /, *args, **kwargs):
        now = _perf_counter()
        recording = self.metadata
        stack = recording.stack
        entry = stack.pop()
        if entry[0] is not f:
            entry = recording.close_through(f, entry, now)
            if entry is None:
                return
        node = entry[3]
        node.calls += 1
        node.total += now - entry[4]
        recording.ops = stack[-1][3].ops


def _node_of(children, f):
    """The child node for callee ``f`` not found by its code or ``id``
    (the fast path): keyed as :func:`describe.callee_key` keys it, made if
    new.  A node keeps its callee only when it :func:`describe.lasts`;
    else a description of it — a profile keeps nothing of the program alive."""
    key = callee_key(f)
    node = children.get(key)
    if node is None:
        node = children[key] = Node(f if type(key) is int else Described.of(f))
    return node


class OperationProfiler(Profiler):
    """Times every call and counts every other operation (the mix)."""

    intercept = cassette.Intercept.ALL


# The operation mix: a prehook per operator callee (the catch-all hooks see
# calls only).  The handlers with argtypes take the usual shapes without a
# tuple of arguments; the one without takes any other.

def _count_operation(ctx, f, /, *args, **kwargs):
    ops = ctx.metadata.ops
    if (f is getattr or f is setattr or f is delattr) and len(args) > 1 and type(args[1]) is str:
        key = (f, type(args[0]), args[1])
    else:
        key = (f, *map(type, args))
    ops[key] = ops.get(key, 0) + 1


def _count_unary(ctx, f, a, /):
    ops = ctx.metadata.ops
    key = (f, type(a))
    ops[key] = ops.get(key, 0) + 1


def _count_binary(ctx, f, a, b, /):
    ops = ctx.metadata.ops
    key = (f, type(a), type(b))
    ops[key] = ops.get(key, 0) + 1


def _count_ternary(ctx, f, a, b, c, /):
    ops = ctx.metadata.ops
    key = (f, type(a), type(b), type(c))
    ops[key] = ops.get(key, 0) + 1


def _count_attribute(ctx, f, obj, name, /, *value):
    ops = ctx.metadata.ops
    key = (f, type(obj), name)
    ops[key] = ops.get(key, 0) + 1


def _nothing(*args, **kwargs):
    pass                        # cassette never calls a hook that does nothing


_SHAPES = {getattr: (_count_attribute, (object, str)),
           setattr: (_count_attribute, (object, str, object)),
           delattr: (_count_attribute, (object, str)),
           operator.setitem: (_count_ternary, (object, object, object)),
           iter: (_count_unary, (object,)), next: (_count_unary, (object,)),
           operator.neg: (_count_unary, (object,)), operator.pos: (_count_unary, (object,)),
           operator.invert: (_count_unary, (object,)), operator.not_: (_count_unary, (object,))}

for _operation in OPERATIONS:
    _handler, _argtypes = _SHAPES.get(_operation, (_count_binary, (object, object)))
    cassette.prehook.register(OperationProfiler, _operation)(_count_operation)
    cassette.prehook.register(OperationProfiler, _operation, *_argtypes)(_handler)
    cassette.posthook.register(OperationProfiler, _operation)(_nothing)


# --------------------------------------------------------------------------
# Reports


class Row:
    """One function of the per-function table."""

    __slots__ = ("name", "file", "line", "calls", "self_time", "total", "ops")

    def __init__(self, name, file, line):
        self.name, self.file, self.line = name, file, line
        self.calls = 0
        self.self_time = 0.0
        self.total = 0.0
        self.ops = {}


class Profile:
    """The finished profile of a run: the call tree and the per-function table."""

    def __init__(self, session, script_name, wall_time, children=()):
        """``children``: ``(pid, report)`` of each child process followed
        (children.py), each a lane of the tree beside the threads'."""
        self.script_name = script_name
        self.wall_time = wall_time
        self.root = session.main.root
        self.root.total = wall_time
        self.costs = session.costs
        if self.costs is not None:
            for recording in (session.main, *session.threads):
                self.costs.subtract(recording.root)
        self.root.calls = 1
        for recording in session.threads:
            lane = Node(None)
            lane.children = recording.root.children
            lane.ops = recording.root.ops
            self._add_lane(("thread", recording.thread_name, id(recording)), lane,
                           f"<thread {recording.thread_name}>")
        for pid, report in children:
            for thread_name, flat in report["recordings"]:
                self._add_lane(("process", pid, thread_name), _unflattened(flat),
                               f"<process {pid}>" if thread_name == "MainThread"
                               else f"<process {pid} thread {thread_name}>")
        # The report walks the tree recursively, and json's encoder too: room
        # for a program that recursed as deep as its own limit allowed.
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * _depth(self.root) + 1000))
        self.rows = {}
        self._tabulate(self.root, {})

    def _add_lane(self, key, lane, name):
        """``lane`` (a thread's or a child process's tree) under the root,
        called ``name``: one call, as long as its calls together."""
        lane.callee = name
        lane.calls = 1
        lane.total = sum(child.total for child in lane.children.values())
        self.root.children[key] = lane

    def _row(self, callee):
        name, file, line = _described(callee)
        if type(callee) is str:
            key = callee
        elif file is not None:
            key = (file, line, name)    # a function's and its generator's runs
        else:
            key = ("~", name)           # as cProfile keys a builtin: by its name
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = Row(name, file, line)
        return key, row

    def _tabulate(self, node, active):
        """Fold the tree into rows; ``active`` counts the rows on the path
        (a recursive call's time is in its outermost call's ``cumtime``)."""
        if node is self.root:
            key, row = None, None
        else:
            key, row = self._row(node.callee)
            row.calls += node.calls
            row.self_time += node.self_time()
            if not active.get(key):
                row.total += node.total
            active[key] = active.get(key, 0) + 1
        target = row.ops if row is not None else self.rows.setdefault(
            "<module>", Row(f"<module> ({self.script_name})", None, None)).ops
        for op, count in node.ops.items():
            target[op] = target.get(op, 0) + count
        for child in node.children.values():
            self._tabulate(child, active)
        if key is not None:
            active[key] -= 1

    def table(self, sort):
        rows = [row for row in self.rows.values() if row.calls and self.shows(row)]
        return sorted(rows, key=SORT_KEYS[sort])

    #: ``(include, exclude)`` globs of the rows the table shows (both empty:
    #: all); matched against a row's name and its file.
    row_filters = ((), ())

    def shows(self, row):
        include, exclude = self.row_filters
        candidates = (row.name, row.file or "")
        if any(fnmatch.fnmatchcase(c, p) for p in exclude for c in candidates):
            return False
        return not include or any(fnmatch.fnmatchcase(c, p) for p in include for c in candidates)

    def operation_totals(self):
        totals = {}
        for row in self.rows.values():
            for op, count in row.ops.items():
                totals[op] = totals.get(op, 0) + count
        return totals

    # ------------------------------------------------------------------
    # text

    def write_text(self, out, sort, limit=None):
        rows = self.table(sort)
        calls = sum(row.calls for row in self.rows.values())     # shown or not
        out.write(f"         {calls} function calls in {self.wall_time:.3f} seconds\n\n")
        out.write(f"   Ordered by: {_ORDER_NAMES[sort]}\n")
        if self.costs is not None:
            costs = self.costs
            out.write(f"   Hooks' own cost taken out (calibrated): "
                      f"{(costs.function_inside + costs.function_outside) * 1e6:.2f} us per "
                      f"call of a Python function, "
                      f"{(costs.other_inside + costs.other_outside) * 1e6:.2f} us per other call"
                      + (f", {costs.operation * 1e6:.2f} us per operation"
                         if costs.operation else "") + "\n")
        out.write("\n")
        out.write("   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n")
        for row in rows[:limit]:
            where = (f"{_shown_path(row.file)}:{row.line}({row.name})" if row.file
                     else f"{{{row.name}}}")
            out.write(f"{row.calls:>9} {row.self_time:8.3f} {row.self_time / row.calls:8.3f} "
                      f"{row.total:8.3f} {row.total / row.calls:8.3f} {where}\n")
        totals = self.operation_totals()
        if not totals:
            return
        out.write(f"\n   Operation mix: {sum(totals.values())} operations\n\n")
        out.write("    count  operation\n")
        for op, count in _by_count(totals):
            out.write(f"{count:>9}  {operation_name(op)}\n")
        out.write("\n   Operation mix by function\n")
        for row in sorted((r for r in self.rows.values() if r.ops and self.shows(r)),
                          key=lambda r: (-sum(r.ops.values()), r.name)):
            out.write(f"\n   {row.name}: {sum(row.ops.values())} operations\n")
            for op, count in _by_count(row.ops)[:limit or None]:
                out.write(f"{count:>9}  {operation_name(op)}\n")

    # ------------------------------------------------------------------
    # json

    def as_json(self, sort):
        return {
            "script": self.script_name,
            "wall_time": self.wall_time,
            "calibration": None if self.costs is None else self.costs.as_dict(),
            "functions": [
                {"name": row.name, "file": row.file, "line": row.line, "calls": row.calls,
                 "tottime": row.self_time, "cumtime": row.total, "ops": _op_dict(row.ops)}
                for row in self.table(sort)],
            "ops": _op_dict(self.operation_totals()),
            "tree": self.tree(),
        }

    def tree(self, node=None):
        """The call tree as plain dicts (the flame graph's input)."""
        node = self.root if node is None else node
        if node is self.root:
            name, file, line = self.script_name, None, None
        else:
            name, file, line = _described(node.callee)
        return {"name": name, "file": file, "line": line, "value": node.total,
                "self": node.self_time(), "calls": node.calls, "ops": _op_dict(node.ops),
                "children": _merged([self.tree(child) for child in node.children.values()])}

    # ------------------------------------------------------------------
    # chrome trace events and speedscope

    def chrome_events(self):
        """Complete ("X") events, one per call path, children laid out one
        after the other inside their parent, in microseconds."""
        events = []

        def lay_out(tree, start, depth):
            events.append({"name": tree["name"], "cat": "function", "ph": "X", "pid": 1,
                           "tid": 1, "ts": round(start * 1e6, 3),
                           "dur": round(tree["value"] * 1e6, 3),
                           "args": {"calls": tree["calls"], "file": tree["file"],
                                    "line": tree["line"], "ops": tree["ops"]}})
            offset = start
            for child in tree["children"]:
                lay_out(child, offset, depth + 1)
                offset += child["value"]

        lay_out(self.tree(), 0.0, 0)
        return {"traceEvents": events, "displayTimeUnit": "ms"}

    def speedscope(self):
        frames, frame_index, samples, weights = [], {}, [], []

        def visit(tree, path):
            key = (tree["name"], tree["file"], tree["line"])
            if key not in frame_index:
                frame_index[key] = len(frames)
                frame = {"name": tree["name"]}
                if tree["file"]:
                    frame["file"], frame["line"] = tree["file"], tree["line"]
                frames.append(frame)
            path = path + [frame_index[key]]
            if tree["self"] > 0:
                samples.append(path)
                weights.append(tree["self"])
            for child in tree["children"]:
                visit(child, path)

        visit(self.tree(), [])
        return {
            "$schema": "https://www.speedscope.app/file-format-schema.json",
            "shared": {"frames": frames},
            "profiles": [{"type": "sampled", "name": self.script_name, "unit": "seconds",
                          "startValue": 0, "endValue": sum(weights),
                          "samples": samples, "weights": weights}],
            "name": self.script_name,
            "activeProfileIndex": 0,
            "exporter": "cassette",
        }

    def write(self, out, format, sort, limit=None):
        """The report in ``format``; the text table shows its first
        ``limit`` rows (None: all)."""
        if format == "text":
            self.write_text(out, sort, limit)
        elif format == "json":
            json.dump(self.as_json(sort), out, indent=1)
            out.write("\n")
        elif format == "chrome":
            json.dump(self.chrome_events(), out)
        elif format == "speedscope":
            json.dump(self.speedscope(), out)
        elif format == "html":
            from .flamegraph import render_flamegraph
            out.write(render_flamegraph(self.tree(), title=f"cassette profile: {self.script_name}"))


_ORDER_NAMES = {"calls": "call count", "tottime": "internal time",
                "cumtime": "cumulative time", "name": "function name"}


class Described:
    """A node's callee as the report describes it, where the node does not
    keep the callee itself (``_node_of``), or in a child process's tree
    (children.py)."""

    __slots__ = ("name", "file", "line", "function")

    def __init__(self, name, file, line, function=False):
        self.name, self.file, self.line = name, file, line
        self.function = function        # (what the calibration charges it as)

    @classmethod
    def of(cls, callee):
        return cls(callee_name(callee), *callee_site(callee), type(callee) is _FunctionType)


def _described(callee):
    """``(name, file, first line)`` of a node's callee."""
    if type(callee) is str:
        return callee, None, None
    if type(callee) is Described:
        return callee.name, callee.file, callee.line
    if type(callee) is Resumed:
        code = callee.code
        return code_name(callee.module, code), code.co_filename, code.co_firstlineno
    return (callee_name(callee), *callee_site(callee))


def _is_function(callee):
    return type(callee) is _FunctionType or (type(callee) is Described and callee.function)


def _unflattened(flat):
    """The tree a child process flattened (``children._flattened``), under a
    new root node."""
    root = Node(None)
    path = [root]
    for index, (depth, (name, file, line), calls, total, ops) in enumerate(flat):
        del path[depth + 1:]
        node = Node(Described(name, file, line))
        node.calls, node.total, node.ops = calls, total, ops
        path[-1].children[index] = node
        path.append(node)
    return root


def _merged(trees):
    """Sibling trees of the same name, file and line as one (two code
    objects, or two callables, that a report cannot tell apart)."""
    by_site = {}
    for tree in trees:
        site = (tree["name"], tree["file"], tree["line"])
        same = by_site.get(site)
        if same is None:
            by_site[site] = tree
            continue
        for field in ("value", "self", "calls"):
            same[field] += tree[field]
        for op, count in tree["ops"].items():
            same["ops"][op] = same["ops"].get(op, 0) + count
        same["children"] = _merged(same["children"] + tree["children"])
    return list(by_site.values())


def _depth(root):
    """How deep the tree goes, found without recursion."""
    deepest, pending = 0, [(root, 0)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in node.children.values())
    return deepest


def _shown_path(path):
    """A path relative to the current directory when it is below it."""
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative


def _by_count(ops):
    return sorted(ops.items(), key=lambda item: (-item[1], operation_name(item[0])))


def _op_dict(ops):
    return {operation_name(op): count for op, count in _by_count(ops)}


def make_context(operations, calibrated=False):
    """A fresh profiling context and its session (with the costs of its
    instrumentation measured when ``calibrated``)."""
    session = ProfileSession()
    context_class = OperationProfiler if operations else Profiler
    if calibrated:
        session.costs = calibrate(context_class)
    return context_class(metadata=session.main), session


# -- calibration: what the hooks themselves cost ------------------------------------

class Costs:
    """What the instrumentation adds to the times a profile measures, in
    seconds: per hooked call of a Python function and of anything else,
    the part inside the call's timed interval (charged to the callee) and
    the part outside it (charged to the caller), and per counted
    operation (charged to the function that made it)."""

    __slots__ = ("function_inside", "function_outside", "other_inside", "other_outside",
                 "operation")

    def __init__(self, function_inside, function_outside, other_inside, other_outside,
                 operation):
        self.function_inside, self.function_outside = function_inside, function_outside
        self.other_inside, self.other_outside = other_inside, other_outside
        self.operation = operation

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def inside(self, callee):
        return self.function_inside if _is_function(callee) else self.other_inside

    def outside(self, callee):
        return self.function_outside if _is_function(callee) else self.other_outside

    def subtract(self, node):
        """Take the instrumentation's cost out of the times of ``node``'s
        subtree: from each node's own time, the part inside each of its
        calls, the part outside each call it made, and each operation it
        counted — never below zero (the costs are estimates) — and its total
        made its own time plus its children's again."""
        self_time = node.self_time()
        for child in node.children.values():
            self.subtract(child)
            self_time -= child.calls * self.outside(child.callee)
        if node.callee is not None:
            self_time -= node.calls * self.inside(node.callee)
        self_time -= sum(node.ops.values()) * self.operation
        node.total = max(self_time, 0.0) + sum(child.total for child in node.children.values())


# The loops are compiled here, not defined: cassette runs its own code
# plainly, and these must run as a program's code does — in a module of
# their own (loaded while they are measured, see calibrate).
_CALIBRATION = types.ModuleType("_cassette_profile_calibration")
_WORKLOADS = vars(_CALIBRATION)
exec(compile("""
def _empty_loop(n):
    for _ in range(n):
        pass

def _builtin_calls(n, isinstance=isinstance, int=int):
    for _ in range(n):
        isinstance(n, int)

def _nothing():
    pass

def _function_calls(n, nothing=_nothing):
    for _ in range(n):
        nothing()

class _Object:
    def method(self, x):
        return x

def _method_calls(n, obj=_Object()):
    for _ in range(n):
        obj.method(n)

def _operations(n):
    x = 0
    for _ in range(n):
        x = x + 1
""", "<cassette profile calibration>", "exec"), _WORKLOADS)


def _plain_time(workload, n):
    start = _perf_counter()
    workload(n)
    return _perf_counter() - start


def _profiled(context_class, workload, n):
    """``(elapsed, the root node)`` of ``workload(n)`` profiled."""
    session = ProfileSession()
    ctx = context_class(metadata=session.main)
    start = _perf_counter()
    cassette.overdub(ctx, workload, n)
    return _perf_counter() - start, session.main.root


def calibrate(context_class, n=600, rounds=15):
    """The :class:`Costs` of ``context_class``'s hooks on this machine and
    runtime, as ``profile.Profile.calibrate`` measures its own: loops of
    known work run plainly and profiled, side by side, ``rounds`` times
    after a first profiled run that warms them up; the cheapest round of
    each counts (a machine's noise only ever adds time).  About 0.2 s."""
    sys.modules[_CALIBRATION.__name__] = _CALIBRATION
    try:
        return _calibrated(context_class, n, rounds)
    finally:
        del sys.modules[_CALIBRATION.__name__]


def _cheapest(context_class, workload, n, rounds):
    """``(plain, profiled, its root node)``: the cheapest of ``rounds``
    plain and profiled runs of ``workload(n)``, after a profiled one that
    warms it up."""
    _profiled(context_class, workload, n)
    plain, (elapsed, root) = float("inf"), (float("inf"), None)
    for _ in range(rounds):
        plain = min(plain, _plain_time(workload, n))
        elapsed, root = min((elapsed, root), _profiled(context_class, workload, n),
                            key=lambda measured: measured[0])
    return plain, elapsed, root


def _calibrated(context_class, n, rounds):
    empty = min(_plain_time(_WORKLOADS["_empty_loop"], n) for _ in range(rounds))

    def costs_of(workload):
        """``(inside, outside)`` per call of ``workload``'s callee."""
        plain, elapsed, root = _cheapest(context_class, workload, n, rounds)
        callee = max(root.children.values(), key=lambda child: child.calls)  # not range
        inside = max(callee.total / callee.calls - max(plain - empty, 0.0) / n, 0.0)
        return inside, max((elapsed - plain) / n - inside, 0.0)

    # Python functions: the mean of a plain call's and a method's.
    function = [sum(pair) / 2 for pair in zip(costs_of(_WORKLOADS["_function_calls"]),
                                              costs_of(_WORKLOADS["_method_calls"]))]
    found = [*function, *costs_of(_WORKLOADS["_builtin_calls"])]
    operation = 0.0
    if context_class is OperationProfiler:
        plain, elapsed, root = _cheapest(context_class, _WORKLOADS["_operations"], n, rounds)
        counted = sum(root.ops.values())
        operation = max(elapsed - plain, 0.0) / counted if counted else 0.0
    return Costs(*found, operation)


