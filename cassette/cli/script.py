"""Running a program overdubbed exactly as ``python`` would run it.

A :class:`Program` is a script path, a module (``-m``) or a string of code
(``-c``) with its arguments.  :meth:`Program.run` makes the world ``python``
gives the program — ``sys.argv``, ``sys.path[0]``, a fresh ``__main__``
module with ``__name__``, ``__file__``, ``__spec__``, ``__loader__`` as
``python`` (or ``runpy``, for ``-m``) sets them — and runs its module body
overdubbed: the code object is handed to ``exec`` under
``cassette.overdub``, which runs the code it is given rewritten
(reference §3.3), so the module's own operations are seen, not only the
functions it calls.

How the run ended is a :class:`Outcome`: the exit status ``python`` would
give, and what to raise or print once the tool has written its report —
``SystemExit`` is re-raised as is (so ``sys.exit("message")`` prints and
exits as usual); any other exception is shown by ``sys.excepthook`` with a
traceback of the program's frames only, and the status is 1.  Non-daemon
threads are joined before the run counts as finished, as the interpreter
does at exit.
"""

import importlib.machinery
import os
import runpy
import signal
import sys
import threading
import types

import cassette

_CASSETTE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class UsageError(Exception):
    """Bad usage: the command line reports it in one line, with status 2."""


class Program:
    """What to run: ``kind`` is ``"path"``, ``"module"`` or ``"code"``."""

    def __init__(self, kind, target, args):
        self.kind = kind
        self.target = target
        self.args = list(args)
        self.compile_error = None
        self.code, self.namespace, self.argv0, self.path0 = self._load()

    @property
    def name(self):
        """A short name for reports: the script's file name, the module, ``-c``."""
        if self.kind == "path":
            return os.path.basename(self.target)
        return self.target if self.kind == "module" else "-c"

    def _load(self):
        namespace = {"__name__": "__main__", "__doc__": None, "__package__": None,
                     "__loader__": None, "__spec__": None}
        if sys.version_info < (3, 14):
            namespace["__annotations__"] = {}
        if self.kind == "code":
            namespace["__loader__"] = importlib.machinery.BuiltinImporter
            return self._compile(self.target, "<string>"), namespace, "-c", ""
        if self.kind == "module":
            return self._load_module(namespace)
        path = os.path.abspath(self.target)
        try:
            with open(path, "rb") as file:
                source = file.read()
        except OSError as error:
            raise UsageError(f"can't open file {path!r}: [Errno {error.errno}] "
                             f"{error.strerror}") from None
        namespace.update(__loader__=importlib.machinery.SourceFileLoader("__main__", path),
                         __file__=path)
        if sys.version_info < (3, 15):
            namespace["__cached__"] = None
        return (self._compile(source, path), namespace, self.target,
                os.path.dirname(os.path.realpath(path)))

    def _compile(self, source, filename):
        """The code, or ``None`` with ``compile_error`` set: a program that
        does not compile fails as ``python`` fails, with the error shown
        and status 1."""
        try:
            return compile(source, filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as error:
            self.compile_error = error
            return None

    def _load_module(self, namespace):
        sys.path.insert(0, os.getcwd())     # where -m looks first
        try:
            name, spec, code = runpy._get_module_details(self.target, UsageError)
        except ImportError as error:
            raise UsageError(str(error)) from None
        finally:
            del sys.path[0]
        namespace.update(__file__=spec.origin, __cached__=spec.cached, __loader__=spec.loader,
                         __package__=spec.parent, __spec__=spec)
        return code, namespace, spec.origin, os.getcwd()

    def run(self, ctx):
        """Run the program under ``ctx``; returns its :class:`Outcome`."""
        if self.compile_error is not None:
            return Outcome(self.compile_error)
        main = types.ModuleType("__main__")
        main.__dict__.update(self.namespace)
        sys.modules["__main__"] = main
        sys.argv[:] = [self.argv0, *self.args]
        sys.path[0] = self.path0
        try:
            cassette.overdub(ctx, exec, self.code, main.__dict__)
        except SystemExit as exit:
            _join_threads()
            return Outcome(exit)
        except BaseException as error:
            _join_threads()
            return Outcome(error)
        _join_threads()
        return Outcome(None)


class Outcome:
    """How the program ended: ``error`` is ``None``, the ``SystemExit`` it
    raised, or the exception that ended it."""

    def __init__(self, error):
        self.error = error

    def conclude(self):
        """End the process as ``python`` would after this run."""
        error = self.error
        if error is None:
            return
        if issubclass(type(error), SystemExit):
            raise error
        traceback = _program_frames(error.__traceback__)
        error.with_traceback(traceback)     # what the default excepthook prints
        sys.last_type, sys.last_value, sys.last_traceback = type(error), error, traceback
        if sys.version_info >= (3, 12):
            sys.last_exc = error
        sys.excepthook(type(error), error, traceback)
        if issubclass(type(error), KeyboardInterrupt):
            # The interpreter's own exit on an uncaught Ctrl-C: killed by SIGINT.
            sys.stdout.flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        raise SystemExit(1)


def _program_frames(traceback):
    """The traceback without its leading frames of this command line."""
    while (traceback is not None
           and os.path.abspath(traceback.tb_frame.f_code.co_filename).startswith(_CASSETTE_DIR)):
        traceback = traceback.tb_next
    return traceback


def _join_threads():
    """Wait for the program's non-daemon threads, as the interpreter does
    before it exits."""
    current = threading.current_thread()
    while True:
        waiting = [thread for thread in threading.enumerate()
                   if thread is not current and not thread.daemon and thread.is_alive()]
        if not waiting:
            return
        for thread in waiting:
            thread.join()
