"""The program's call stack as a tool's hooks can know it.

A ``prehook`` opens an operation and its ``posthook`` closes it — but an
operation that raises gets no ``posthook`` (reference §3.2), nor does any
operation the exception propagates out of.  A tool that keeps a stack of
open calls must find out by other means that some of them ended, or it would
nest everything that follows under them.  :class:`Recording` keeps that
stack for one thread and closes what an exception ended:

* every entry records the program frame that made the operation and the
  instruction that frame was at (``f_lasti``): a frame that makes a new
  operation from another instruction has finished all it started before
  (a frame runs one instruction at a time; code the interpreter calls back
  from C — a sort key — is seen from the frame still at its call);
* with ``sys.monitoring`` (3.12 on), an exception caught in a program frame
  ends at once everything that frame had open, and a frame an exception
  leaves (``PY_UNWIND``) ends with what it had open.  3.11 has only the rule
  above, so an operation that raised looks, there, as if it lasted until
  its frame's next operation.

:class:`ToolContext` is the base of the command line's contexts: its
``metadata`` is the main thread's :class:`Recording`, and a thread the
program starts runs overdubbed too, under a context like it whose metadata
is a new :class:`Recording` for that thread (threads otherwise run plainly,
reference §3.3).  The tools subclass both: their hooks push and pop the
entries, and :meth:`Recording.close` is what they do with an entry an
exception ended.
"""

import contextvars
import functools
import importlib._bootstrap
import os
import signal
import sys
import threading
import types

import _signal
import _thread

import cassette
from cassette import locks
from cassette.entry import IMPLEMENTATION

from . import children

_getframe = sys._getframe
_CASSETTE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Entry fields: [callee, caller frame, caller's f_lasti, *the tool's own]
CALLEE, CALLER, LASTI = 0, 1, 2


class _CodeVerdicts(dict):
    """Code object -> does it belong to cassette (its runtime or this tool)?"""

    def __init__(self, directory):
        super().__init__()
        self.directory = directory

    def __missing__(self, code):
        verdict = self[code] = os.path.abspath(code.co_filename).startswith(self.directory)
        return verdict


_core_code = _CodeVerdicts(_CASSETTE_DIR + os.sep)

def identity(frame):
    return frame


if IMPLEMENTATION == "cython":
    program_frame = identity
    """The program frame that made the operation a hook was called for,
    given the hook's caller: the Cython core calls hooks directly."""
else:
    def program_frame(frame):
        """The program frame that made the operation a hook was called for,
        given the hook's caller: past the pure-Python runtime's frames."""
        while frame is not None and _core_code[frame.f_code]:
            frame = frame.f_back
        return frame


class Recording:
    """One thread's stack of open operations; ``stack[0]`` is the root entry.

    Subclasses define ``close(entry, raised, now=None)``, called for every
    entry an exception ended: ``raised`` is the exception's type, or
    ``True`` when not known; ``now`` is the time of the ``posthook`` that
    revealed it, if one did (the entry cannot have outlasted it).
    """

    def __init__(self, session, thread_name, root):
        self.session = session
        self.thread_name = thread_name
        self.stack = [root]

    def settle(self, caller):
        """Close the entries ``caller`` made that cannot be open any more (it
        has moved on to another instruction); returns the new top."""
        stack = self.stack
        top = stack[-1]
        while len(stack) > 1 and top[CALLER] is caller and top[LASTI] != caller.f_lasti:
            self.close(stack.pop(), True)
            top = stack[-1]
        return top

    def close_through(self, f, entry, now=None):
        """A ``posthook`` of ``f`` (at ``now``) came while ``entry`` (not
        ``f``'s) was on top: close the entries above ``f``'s, which ended by
        an exception; returns ``f``'s entry, or ``None`` (nothing of ``f``
        is open)."""
        stack = self.stack
        for index in range(len(stack) - 1, 0, -1):
            if stack[index][CALLEE] is f:
                break
        else:
            stack.append(entry)
            return None
        self.close(entry, True, now)
        while len(stack) - 1 > index:
            self.close(stack.pop(), True, now)
        return stack.pop()

    def end_operations_of(self, frame, raised):
        """``frame`` caught an exception, or is being left by one: every
        operation it made that is still open has ended."""
        stack = self.stack
        index = len(stack) - 1
        while index > 0 and stack[index][CALLER] is not frame:
            index -= 1
        if index == 0:
            return False
        while index > 1 and stack[index - 1][CALLER] is frame:
            index -= 1
        while len(stack) > index:
            self.close(stack.pop(), raised)
        return True

    def leave_frame(self, frame, raised):
        """``frame`` is being left by an exception: its operations have ended,
        and so has the call that ran it, if that is the top entry."""
        self.end_operations_of(frame, raised)
        stack = self.stack
        top = stack[-1]
        code = frame.f_code
        callee = top[CALLEE]
        if (len(stack) > 1 and top[CALLER] is program_frame(frame.f_back)
                and getattr(getattr(callee, "__code__", None), "co_name", None) == code.co_name
                and callee.__code__.co_firstlineno == code.co_firstlineno):
            self.close(stack.pop(), raised)

    def finish(self):
        """The program has ended: close what is still open."""
        while len(self.stack) > 1:
            self.close(self.stack.pop(), True)

    def close(self, entry, raised, now=None):
        raise NotImplementedError

    def release(self):
        """See :meth:`Session.release`."""
        del self.stack[1:]


class Session:
    """What the recordings of one run share: the recording of each thread,
    and the exception watch that repairs their stacks."""

    def __init__(self):
        self.recordings = {}            # thread ident -> Recording
        self.lock = locks.lock()
        self._tool = None

    def add(self, recording):
        with self.lock:
            self.recordings[threading.get_ident()] = recording
        return recording

    def watch_exceptions(self):
        """Follow caught and propagating exceptions with ``sys.monitoring``
        (3.12 on), on a tool id nobody uses."""
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is None:
            return
        # The ids no standard tool claims first (pdb, coverage and cProfile
        # take 0, 1 and 2).
        for tool in (4, 3, 5, 1, 0, 2):
            if monitoring.get_tool(tool) is None:
                break
        else:
            return
        monitoring.use_tool_id(tool, "cassette.cli")
        events = monitoring.events
        monitoring.register_callback(tool, events.EXCEPTION_HANDLED, self._exception_handled)
        monitoring.register_callback(tool, events.PY_UNWIND, self._unwound)
        monitoring.set_events(tool, events.EXCEPTION_HANDLED | events.PY_UNWIND)
        self._tool = tool

    def stop_watching(self):
        if self._tool is not None:
            sys.monitoring.set_events(self._tool, 0)
            sys.monitoring.free_tool_id(self._tool)
            self._tool = None

    def _program_recording(self, frame):
        if _core_code[frame.f_code]:
            return None
        return self.recordings.get(threading.get_ident())

    def _exception_handled(self, code, offset, exception):
        frame = _getframe(1)
        recording = self._program_recording(frame)
        if recording is not None:
            recording.end_operations_of(frame, type(exception))

    def _unwound(self, code, offset, exception):
        frame = _getframe(1)
        recording = self._program_recording(frame)
        if recording is not None:
            recording.leave_frame(frame, type(exception))

    def flush(self):
        """Write out what is buffered (before a fork: the child must not
        write it again)."""

    def mute(self):
        """In a forked child, this copy of the parent's session: it writes
        nothing from now on, and no longer watches exceptions."""
        self.stop_watching()

    def release(self):
        """The report is written: let go of what the recordings hold of the
        program (its functions, their globals, callable objects), which
        would otherwise live on into the interpreter's finalization, when
        the program's own objects — and the callbacks of their weak
        references — find their modules' globals gone."""
        with self.lock:
            recordings = list(self.recordings.values())
        for recording in recordings:
            recording.release()

    def finish(self, children=()):
        """The program has ended: close every recording.  ``children``: the
        reports of its child processes (children.py), for a session that
        writes them itself."""
        self.stop_watching()
        with self.lock:
            recordings = list(self.recordings.values())
        for recording in recordings:
            recording.finish()


class ToolContext(cassette.Context):
    """The base of the command line's contexts; ``metadata`` is a
    :class:`Recording` (see the module documentation)."""


def _thread_name(function):
    """The name of the thread that will run ``function`` (a ``Thread``'s
    bound ``_bootstrap``), read without running the program's code."""
    if type(function) is types.MethodType and issubclass(type(function.__self__), threading.Thread):
        return threading.Thread.name.fget(function.__self__)
    return "thread"


def _start_thread_overdubbed(ctx, f, function, /, *args, **kwargs):
    """The ``fallback`` of the primitive that starts a thread: the thread
    runs ``function`` overdubbed, with a recording of its own."""
    recording = ctx.metadata
    name = _thread_name(function)

    def run_overdubbed(*thread_args, **thread_kwargs):
        thread_recording = recording.session.add(recording.for_thread(name))
        thread_ctx = cassette.similarcontext(ctx, metadata=thread_recording)
        return cassette.overdub(thread_ctx, function, *thread_args, **thread_kwargs)

    return f(run_overdubbed, *args, **kwargs)


def _run_in_context_overdubbed(ctx, f, context, function, /, *args, **kwargs):
    """The ``fallback`` of ``contextvars.Context.run`` under the pure-Python
    runtime, which does not route callbacks from C (reference §3.3): a
    thread runs its ``run`` through it from 3.14 on.  The function runs
    overdubbed, its call an operation inside ``Context.run``'s, as the
    Cython core's routing makes it."""
    # A partial's body is the call of its function, an operation (reference
    # §3.3); a lambda here would not do: cassette runs its own code plainly.
    call = functools.partial(function, *args, **kwargs)
    return f(context, functools.partial(cassette.overdub, ctx, call))


if IMPLEMENTATION == "python":      # the Cython core routes the callback itself
    cassette.fallback.register(ToolContext, contextvars.Context.run)(_run_in_context_overdubbed)

for _starter in ("start_new_thread", "start_joinable_thread"):
    if hasattr(_thread, _starter):
        cassette.fallback.register(ToolContext, getattr(_thread, _starter))(
            _start_thread_overdubbed)


def _kill_noted(ctx, f, /, *args, **kwargs):
    """The ``fallback`` of ``os.kill``: a SIGTERM sent to a followed child
    is sent again while the child has not handled it (children.py)."""
    result = f(*args, **kwargs)
    if len(args) == 2 and not kwargs and args[1] == signal.SIGTERM:
        children.note_sigterm_sent(args[0])
    return result


def _signal_noted(ctx, f, /, *args, **kwargs):
    """The ``fallback`` of ``_signal.signal`` (``signal.signal`` is Python
    that calls it): a program's own handler of
    SIGTERM takes over from a followed child's (children.py)."""
    result = f(*args, **kwargs)
    if args:
        children.note_signal_handler(args[0])
    return result


cassette.fallback.register(ToolContext, os.kill)(_kill_noted)
cassette.fallback.register(ToolContext, _signal.signal)(_signal_noted)


def _import_plainly(ctx, f, /, *args, **kwargs):
    """The import system's own functions run plainly, as a handler does
    (reference §3.2), with the module bodies they execute: a trace shows
    the import as one call, not the dozens of calls inside importlib, and
    an imported module's functions run overdubbed when the program calls
    them.  (The script's own module body runs overdubbed: script.py.)
    Child processes are followed from the import of ``multiprocessing``
    on (children.py)."""
    try:
        return f(*args, **kwargs)
    finally:
        children.note_imports()


for _name in ("_find_and_load", "_handle_fromlist"):
    cassette.execute.register(ToolContext, getattr(importlib._bootstrap, _name))(_import_plainly)
