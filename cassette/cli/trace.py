"""``python -m cassette trace``: the call tree of a run, written as it happens.

Every call the program makes is a line when it starts, indented by its
depth, with short reprs of its arguments (:func:`describe.short_repr`, which
runs no user code); its result follows when it returns — on the same line
when nothing was shown in between::

    fib(3)
      fib(2)
        fib(1) → 1
        fib(0) → 0
      fib → 1
      fib(1) → 1
    fib → 2

A call an exception ended shows ``raised`` (with the exception's type where
``sys.monitoring`` tells it, 3.12 on).  With ``--ops`` the other operations
of reference §3.1 (``operator.add(2, 3)``, ``getattr(<Body>, 'x')``) are
lines too.  ``--depth N`` shows calls down to depth N (the module body's
calls are depth 1); ``--include``/``--exclude`` take globs matched against a
callee's module, its qualified name and both joined by a dot (``mypkg.*``,
``Body.*``, ``*.advance``): an excluded call is hidden with everything it
calls, and when includes are given only calls matching one are shown (their
callees are judged on their own).  Lines of threads other than the main one
start with ``[thread name]``.

``--format json`` writes a JSON array of events, one per line —
``{"event": "call", "depth": …, "name": …, "args": […], "file": …, "line": …}``,
``{"event": "return", "depth": …, "name": …, "value": …}`` and
``{"event": "raise", …, "exception": …}`` — so a long run streams to disk
and nothing of it is kept in memory.
"""

import fnmatch
import json
import sys
import types
from json.encoder import encode_basestring as _json_string

import cassette
from cassette import locks

from . import callstack
from .callstack import CALLER, LASTI, program_frame
from .describe import (BUILTIN_CALLABLE_TYPES, callee_key, callee_name, callee_site,
                       code_qualname,
                       function_module, module_of, short_repr, type_name)

_getframe = sys._getframe
_FunctionType = types.FunctionType
_HOOKED_DIRECTLY = program_frame is callstack.identity

# Trace entries: [callee, caller frame, caller's f_lasti, depth, shown,
#                 callees may show, text of a call line not yet written
#                 (text) or the callee's name as JSON (json)]
DEPTH, SHOWN, OPEN, PENDING = 3, 4, 5, 6

_BOLD, _DIM, _CYAN, _RED, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[36m", "\x1b[31m", "\x1b[0m"


class Filters:
    """``--depth``, ``--include``, ``--exclude``: what is shown, decided
    once per callee."""

    def __init__(self, depth=None, include=(), exclude=()):
        self.depth = depth
        self.include = list(include)
        self.exclude = list(exclude)
        # describe.callee_key(callee) -> (callee if it lasts, name, file, line, shown,
        # excluded, name as JSON, file and line as JSON members)
        self.verdicts = {}

    def verdict(self, f):
        """The verdict on ``f``, not found by its code or ``id`` (the fast
        path): keyed as :func:`describe.callee_key` keys it, made if new.  It
        keeps ``f`` only when ``f`` :func:`describe.lasts` (for its ``id`` to
        stay its own); a trace keeps nothing of the program alive."""
        key = callee_key(f)
        verdict = self.verdicts.get(key)
        if verdict is None:
            name = callee_name(f)
            file, line = callee_site(f)
            candidates = self._candidates(f, name)
            excluded = any(fnmatch.fnmatchcase(c, p) for p in self.exclude for c in candidates)
            shown = not excluded and (not self.include or any(
                fnmatch.fnmatchcase(c, p) for p in self.include for c in candidates))
            where = (f'"file": {"null" if file is None else _json_string(file)}, '
                     f'"line": {"null" if line is None else line}')
            verdict = self.verdicts[key] = (f if type(key) is int else None, name, file, line,
                                             shown, excluded, _json_string(name), where)
        return verdict

    @staticmethod
    def _candidates(f, name):
        """What the globs are matched against: the name, the qualified name,
        the module, and the module and qualified name joined."""
        if type(f) is _FunctionType:
            module, qualname = function_module(f), code_qualname(f.__code__)
        elif issubclass(type(f), type):
            module, qualname = module_of(f), type_name(f)
        elif type(f) is types.BuiltinFunctionType:
            module, qualname = f.__module__, f.__qualname__
        else:
            is_builtin = issubclass(type(f), BUILTIN_CALLABLE_TYPES)
            owner = getattr(f, "__objclass__", None) if is_builtin else None
            module = module_of(owner) if issubclass(type(owner), type) else ""
            qualname = name
        module = module if type(module) is str else ""
        return (name, qualname, module, f"{module}.{qualname}")


class TraceRecording(callstack.Recording):
    """A thread's part of the trace: writes its lines as calls start and end."""

    def __init__(self, session, thread_name):
        super().__init__(session, thread_name, [None, None, -1, 0, False, True, None])
        self.write = session.write
        self.filters = session.filters
        self.verdicts = session.filters.verdicts
        self.pending = None
        self.prefix = "" if thread_name == "MainThread" else f"[{thread_name}] "

    def for_thread(self, name):
        return type(self)(self.session, name)

    def enter(self, f, args, kwargs, caller, top):
        depth = top[DEPTH] + 1
        if not top[OPEN]:
            self.stack.append([f, caller, caller.f_lasti, depth, False, False, None])
            return
        verdict = self.verdicts.get(f.__code__ if type(f) is _FunctionType else id(f))
        if verdict is None:
            verdict = self.filters.verdict(f)
        shown, opens = verdict[4], not verdict[5]
        max_depth = self.filters.depth
        if max_depth is not None:
            shown = shown and depth <= max_depth
            opens = opens and depth < max_depth
        entry = [f, caller, caller.f_lasti, depth, shown, opens, None]
        self.stack.append(entry)
        if shown:
            self.started(entry, verdict, args, kwargs)

    def leave(self, output, f):
        entry = self.stack.pop()
        if entry[0] is not f:
            entry = self.close_through(f, entry)
            if entry is None:
                return
        if entry[SHOWN]:
            self.ended(entry, short_repr(output), None)

    def close(self, entry, raised, now=None):
        if entry[SHOWN]:
            self.ended(entry, None, raised)


class TextTrace(TraceRecording):
    def started(self, entry, verdict, args, kwargs):
        name = verdict[1]
        if self.pending is not None:
            self._write_pending()
        arguments = [short_repr(a) for a in args]
        arguments += [f"{k}={short_repr(v)}" for k, v in kwargs.items()]
        colour = self.session.colour
        entry[PENDING] = (f"{_BOLD}{_CYAN}{name}{_RESET}({_DIM}{', '.join(arguments)}{_RESET})"
                          if colour else f"{name}({', '.join(arguments)})")
        self.pending = entry

    def _write_pending(self):
        entry = self.pending
        self.write(f"{self.prefix}{'  ' * (entry[DEPTH] - 1)}{entry[PENDING]}\n")
        entry[PENDING] = None
        self.pending = None

    def ended(self, entry, value, raised):
        colour = self.session.colour
        if raised is None:
            outcome = f"→ {_DIM}{value}{_RESET}" if colour else f"→ {value}"
        else:
            what = "raised" if raised is True else f"raised {raised.__name__}"
            outcome = f"{_RED}{what}{_RESET}" if colour else what
        indent = "  " * (entry[DEPTH] - 1)
        if entry is self.pending:
            self.write(f"{self.prefix}{indent}{entry[PENDING]} {outcome}\n")
            self.pending = None
        else:
            if self.pending is not None:
                self._write_pending()
            name = self.filters.verdict(entry[0])[1]
            self.write(f"{self.prefix}{indent}{_BOLD}{_CYAN}{name}{_RESET} {outcome}\n"
                       if colour else f"{self.prefix}{indent}{name} {outcome}\n")


class JsonTrace(TraceRecording):
    def __init__(self, session, thread_name):
        super().__init__(session, thread_name)
        self.thread = "" if not self.prefix else f', "thread": {_json_string(thread_name)}'

    def started(self, entry, verdict, args, kwargs):
        arguments = [_json_string(short_repr(a)) for a in args]
        if kwargs:
            arguments += [_json_string(f"{k}={short_repr(v)}") for k, v in kwargs.items()]
        entry[PENDING] = verdict[6]
        self.write(f',\n{{"event": "call", "depth": {entry[DEPTH]}, "name": {verdict[6]}, '
                   f'"args": [{", ".join(arguments)}], {verdict[7]}{self.thread}}}')

    def ended(self, entry, value, raised):
        if raised is None:
            self.write(f',\n{{"event": "return", "depth": {entry[DEPTH]}, "name": {entry[PENDING]}, '
                       f'"value": {_json_string(value)}{self.thread}}}')
        else:
            exception = "null" if raised is True else _json_string(raised.__name__)
            self.write(f',\n{{"event": "raise", "depth": {entry[DEPTH]}, "name": {entry[PENDING]}, '
                       f'"exception": {exception}{self.thread}}}')


class TraceSession(callstack.Session):
    """One traced run: where the lines go and how they look."""

    def __init__(self, out, format, filters, colour):
        super().__init__()
        self.out = out
        self.format = format
        self.filters = filters
        self.colour = colour
        self.write = self._locked_writer(out)
        if format == "json":
            self.write('[{"event": "start"}')
        self.main = self.add((JsonTrace if format == "json" else TextTrace)(self, "MainThread"))

    def _locked_writer(self, out):
        """``out.write`` for the lines of every thread: a text file is not
        safe to write from several threads (torn lines, NUL bytes, lines
        lost), so each line is written whole under a lock — reentrant, for a
        signal handler that runs traced code between two of a thread's
        writes — and nothing is written once the report is finished (a
        daemon thread still running then)."""
        lock = locks.lock()
        write = out.write
        self.finished = False

        def locked_write(text):
            with lock:
                if not self.finished:
                    write(text)

        self._write_lock = lock
        return locked_write

    def flush(self):
        with self._write_lock:
            if not self.finished and not self.out.closed:
                self.out.flush()

    def mute(self):
        super().mute()
        self.finished = True            # (without the lock: a thread gone at the fork may hold it)

    def finish(self, children=()):
        super().finish()
        with self._write_lock:
            if self.main.pending is not None and self.format != "json":
                self.main._write_pending()
            for pid, kind, text in children:
                if kind == "trace":
                    self._write_child(pid, text)
            if self.format == "json":
                self.write("\n]\n")
            self.finished = True
            self.out.flush()

    def release(self):
        super().release()
        self.filters.verdicts.clear()

    def _write_child(self, pid, text):
        """A child process's trace (children.py): its lines, each after
        ``[process PID]``, or its JSON events with a ``"process"`` member."""
        if self.format == "json":
            try:
                events = json.loads(text)
            except ValueError:          # the child died before it had finished its trace
                events = _whole_events(text)
            for event in events:
                if event.get("event") != "start":
                    event["process"] = pid
                    self.write(",\n" + json.dumps(event, ensure_ascii=False))
            return
        prefix = f"[process {pid}] "
        for line in text.splitlines(keepends=True):
            self.write(prefix + line)
        if text and not text.endswith("\n"):
            self.write("\n")


def _whole_events(text):
    """The events of a JSON trace cut short: its whole lines."""
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line.strip().lstrip("[").rstrip(","))
        except ValueError:
            continue
        if type(event) is dict:
            events.append(event)
    return events


class Tracer(callstack.ToolContext):
    """Traces every call; ``metadata`` is the thread's :class:`TraceRecording`."""

    intercept = cassette.Intercept.CALLS

    def prehook(self, f, /, *args, **kwargs):
        recording = self.metadata
        caller = _getframe(1) if _HOOKED_DIRECTLY else program_frame(_getframe(1))
        top = recording.stack[-1]
        if top[CALLER] is caller and top[LASTI] != caller.f_lasti:
            top = recording.settle(caller)
        recording.enter(f, args, kwargs, caller, top)

    def posthook(self, output, f, /, *args, **kwargs):
        self.metadata.leave(output, f)


class OperationTracer(Tracer):
    """Traces every operation, calls and operators."""

    intercept = cassette.Intercept.ALL


def make_context(out, format, filters, colour, operations):
    """A fresh tracing context and its session."""
    session = TraceSession(out, format, filters, colour)
    context_class = OperationTracer if operations else Tracer
    return context_class(metadata=session.main), session
