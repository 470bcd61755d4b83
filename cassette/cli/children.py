"""Child processes: followed, and their reports merged into the parent's.

``multiprocessing`` starts a child by forking (``fork``), by running a new
interpreter (``spawn``) or by forking a server that does (``forkserver``);
``concurrent.futures.ProcessPoolExecutor`` and ``multiprocessing.Pool``
start theirs the same ways.  Every such child runs
``BaseProcess._bootstrap``, and that is where a child is followed: once the
program has imported ``multiprocessing`` (the command line sees each import,
callstack.py; under the pure-Python runtime, which does not, it is imported
first), ``_bootstrap`` runs the child overdubbed under a tool of its
own — the parent's command, format and options (``Settings``) — and writes
its report into a directory the parent made.  A spawned or forkserver child
is a new interpreter: the settings travel in the data ``multiprocessing``
sends it to prepare (``get_preparation_data``), as an object whose
unpickling installs the same in the child.

When the program has finished, the parent waits for the children it would
wait for at exit (non-daemonic), and merges: a profile gets one lane per
child process (``<process PID>``, beside the threads' lanes) and its rows
summed into the parent's; a trace gets the child's lines, each starting with
``[process PID]``, or for JSON its events with a ``"process"`` member.

A forked child inherits the parent's tool as it was at the fork: in the
child that copy is muted (it writes nothing, and its report is never
written), so a report never holds a line twice.  A pool's worker ended by
``terminate()`` (``with Pool() as pool:``) writes its report when the
signal comes, then dies of it as it would have; its parent signals it
again while that has not happened (:func:`resignal`).  With
``--no-children`` the children run plainly, a forked one included.

Not followed: a bare ``os.fork()`` outside ``multiprocessing`` (the child
runs on overdubbed, muted, and writes no report), ``subprocess`` (a new
program), a daemonic child still running when the parent's program ends.
"""

import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
from _thread import start_new_thread as _start_new_thread
from time import sleep as _sleep

from cassette import locks
from cassette.entry import IMPLEMENTATION

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_kill = os.kill


class Settings:
    """What makes a child's tool like the parent's: the command (``trace``
    or ``profile``), its format and options, and the directory reports go
    to (made when the program can first start a child: :func:`note_imports`)."""

    def __init__(self, command, format, operations, depth, include, exclude):
        self.command, self.format, self.operations = command, format, operations
        self.depth, self.include, self.exclude = depth, list(include), list(exclude)
        self.directory = None

    def make_tool(self, out, colour=False, calibrated=False):
        """A fresh context and session of the command, a trace writing to
        ``out`` (a profile is written when the run ends: the parent's by
        the command line, a child's by :func:`_report`)."""
        from . import profile, trace        # (they import callstack, which imports this)
        if self.command == "trace":
            filters = trace.Filters(self.depth, self.include, self.exclude)
            return trace.make_context(out, self.format, filters, colour, self.operations)
        return profile.make_context(self.operations, calibrated)


class _Following:
    """This process's part: the settings, whether children are followed,
    the session of the tool running here, and whether this process is a
    child whose report goes to the directory."""

    def __init__(self, settings, follow, session=None):
        self.settings = settings
        self.follow = follow
        self.begin(session)

    def begin(self, session):
        """``session`` is the tool running in this process from now on
        (a forked child's copy of the parent's flags is reset here)."""
        self.session = session
        self.reported = self.writing = self.terminated = False


_following = None
_original_bootstrap = _original_preparation_data = None
_fork_hook_installed = False


def watch(settings, follow, session):
    """In the parent, before the program runs: follow its children (or,
    ``follow`` false, run them plainly), reporting into ``settings.directory``."""
    global _following, _fork_hook_installed
    _following = _Following(settings, follow, session)
    if not _fork_hook_installed and hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
        _fork_hook_installed = True
    if IMPLEMENTATION == "python":
        # The pure-Python runtime sees no import (the interpreter calls the
        # import system from C, which that runtime does not route): what
        # the children need is imported now.
        import multiprocessing.process  # noqa: F401
        import multiprocessing.spawn  # noqa: F401
    note_imports()


def note_imports():
    """Called after each import the program makes: once ``multiprocessing``
    is there, its children start through :func:`_bootstrap`."""
    global _original_bootstrap, _original_preparation_data
    if _following is None:
        return
    modules = sys.modules
    if _original_bootstrap is None:
        process = modules.get("multiprocessing.process")
        if process is not None:
            if _following.follow and _following.settings.directory is None:
                _following.settings.directory = tempfile.mkdtemp(prefix="cassette-children-")
            _original_bootstrap = process.BaseProcess._bootstrap
            process.BaseProcess._bootstrap = _bootstrap
    if _original_preparation_data is None and _following.follow:
        spawn = modules.get("multiprocessing.spawn")
        if spawn is not None:
            _original_preparation_data = spawn.get_preparation_data
            spawn.get_preparation_data = _preparation_data


def in_forked_child():
    """Whether this process is a fork of the one the command line runs in
    (whose report is not this process's to write)."""
    return _following is not None and _following.session is None


# -- in the child ----------------------------------------------------------------

def _bootstrap(self, *args, **kwargs):
    """``BaseProcess._bootstrap``, the child's whole life: overdubbed under a
    tool of its own whose report goes to the directory (or plainly)."""
    following = _following
    if following is None or not following.follow:
        return _original_bootstrap(self, *args, **kwargs)
    import cassette
    settings = following.settings
    out = None
    if settings.command == "trace":
        out = open(_report_path(settings, "trace"), "w", encoding="utf-8")
    ctx, session = settings.make_tool(out)
    following.begin(session)
    session.watch_exceptions()
    _report_when_terminated(following)
    try:
        return cassette.overdub(ctx, _original_bootstrap, self, *args, **kwargs)
    finally:
        _report(following)
        if out is not None:
            out.close()
        session.release()               # (a spawned child's interpreter finalizes next)


def _report(following):
    """Write this child's report (once)."""
    if following.reported or following.session is None:
        return
    following.reported = following.writing = True
    try:
        _remove(_report_path(following.settings, "sigterm"))
        session = following.session
        session.finish()
        if following.settings.command == "profile":
            report = {"pid": os.getpid(),
                      "recordings": [(recording.thread_name, _flattened(recording.root))
                                     for recording in (session.main, *session.threads)]}
            path = _report_path(following.settings, "profile")
            with open(path + ".part", "wb") as file:
                pickle.dump(report, file, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(path + ".part", path)
    finally:
        following.writing = False
        if following.terminated:        # SIGTERM came: die of it, as the child would have
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _kill(os.getpid(), signal.SIGTERM)


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _report_path(settings, kind, pid=None):
    """Where process ``pid`` (this one by default) writes its ``kind``
    (``trace``, ``profile``, or ``sigterm``: its SIGTERM handler unrun)."""
    return os.path.join(settings.directory, f"{os.getpid() if pid is None else pid}.{kind}")


def _report_when_terminated(following):
    """A pool's worker is ended with SIGTERM: write the report first, then
    die of the signal as the child would have (its exit status unchanged).
    Only where the child keeps the default action."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def terminated(signum, frame):
        following.terminated = True
        if following.writing:           # a second signal, or the report at the child's end:
            return                      # it dies when written
        if not following.reported:
            _report(following)          # (and dies)
            return
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, terminated)
    open(_report_path(following.settings, "sigterm"), "w").close()


def _preparation_data(name):
    """``spawn.get_preparation_data``, with the settings for the new
    interpreter (taken by ``prepare``'s caller, which ignores the key)."""
    data = _original_preparation_data(name)
    if _following is not None and _following.follow:
        data["cassette_follow"] = _Stowaway(_following.settings)
    return data


class _Stowaway:
    """Unpickled in a spawned child: installs the following there."""

    def __init__(self, settings):
        self.settings = settings

    def __reduce__(self):
        return _follow_in_new_interpreter, (self.settings,)


def _follow_in_new_interpreter(settings):
    global _following
    _following = _Following(settings, True)
    note_imports()
    return None


def _before_fork():
    if _following is not None and _following.session is not None:
        _following.session.flush()      # nothing buffered for the child to write again


def _after_fork_in_child():
    """The parent's tool, copied into the child: muted."""
    global _resignalling
    _unhandled.clear()                  # (the thread that signalled them is the parent's)
    _resignalling = False
    if _following is None or _following.session is None:
        return
    session = _following.session
    _following.session = None
    session.mute()


# -- in the parent, ending a child ------------------------------------------------

#: How often the parent signals again a child it sent SIGTERM whose
#: handler has not run, and at most how many times (see :func:`resignal`).
RESIGNAL_EVERY = 0.25
RESIGNALS_MAX = 40

_unhandled = {}             # pid -> [its Popen, its PID.sigterm path, signals left]
_resignalling = False       # whether the thread of _resignal_while_unhandled runs
_unhandled_lock = locks.lock()


def note_sigterm_sent(pid):
    """The program sent SIGTERM to ``pid`` (callstack.py's fallback of
    ``os.kill``): when that is a followed child, see that it is handled."""
    following = _following
    process = sys.modules.get("multiprocessing.process")
    if following is None or not following.follow or process is None:
        return
    for child in list(process._children):
        popen = child._popen
        if popen is not None and popen.pid == pid:
            resignal(pid, _report_path(following.settings, "sigterm", pid), popen)
            return


def resignal(pid, marker, popen):
    """Send ``pid`` SIGTERM again every ``RESIGNAL_EVERY`` seconds (at most
    ``RESIGNALS_MAX`` times) while the file ``marker`` exists and
    ``popen.returncode`` is None: until its handler has run, or it ended.

    A followed child writes its report from a Python handler of SIGTERM,
    and a signal that lands just before it blocks in a C call that looks
    for signals only when interrupted (the wait of a ``multiprocessing``
    lock, as an idle pool worker's) is handled only when that call
    returns: for an idle worker, never, where the default action would
    have ended it.  The thread that signals is started with ``_thread``
    (``threading`` does not list it) and ends when no child is left."""
    global _resignalling
    with _unhandled_lock:
        _unhandled[pid] = [popen, marker, RESIGNALS_MAX]
        if not _resignalling:
            _resignalling = True
            _start_new_thread(_resignal_while_unhandled, ())


def _resignal_while_unhandled():
    global _resignalling
    while True:
        _sleep(RESIGNAL_EVERY)
        with _unhandled_lock:
            for pid, entry in list(_unhandled.items()):
                popen, marker, left = entry
                if popen.returncode is not None or left == 0 or not os.path.exists(marker):
                    del _unhandled[pid]
                    continue
                entry[2] = left - 1
                try:
                    _kill(pid, signal.SIGTERM)
                except OSError:
                    del _unhandled[pid]
            if not _unhandled:
                _resignalling = False
                return


def note_signal_handler(signalnum):
    """The program of this process sets a handler of ``signalnum``
    (callstack.py's fallback of ``signal.signal``): a SIGTERM is no longer
    this child's report to write, nor its parent's to repeat."""
    following = _following
    if (signalnum == signal.SIGTERM and following is not None and following.session is not None
            and following.settings.directory is not None):
        _remove(_report_path(following.settings, "sigterm"))


# -- in the parent, when the program has finished ---------------------------------

def finish():
    """Wait for the children the interpreter waits for at exit, then read
    their reports: ``[(pid, kind, report)]``, in order of process id; the
    directory is removed."""
    if _following is None:
        return []
    process = sys.modules.get("multiprocessing.process")
    if process is not None:
        for child in list(process._children):   # (what multiprocessing's atexit joins)
            if not child.daemon and child._popen is not None:
                try:
                    child.join()
                except Exception:           # not ours to join (another thread's)
                    pass
    directory = _following.settings.directory
    if directory is None:               # no child could start
        return []
    reports = []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    for name in names:
        pid, _, kind = name.partition(".")
        if not pid.isdigit() or kind not in ("trace", "profile"):
            continue
        path = os.path.join(directory, name)
        if kind == "profile":
            with open(path, "rb") as file:
                report = pickle.load(file)
        else:
            with open(path, encoding="utf-8") as file:
                report = file.read()
        reports.append((int(pid), kind, report))
    shutil.rmtree(directory, ignore_errors=True)
    return sorted(reports, key=lambda item: item[0])


# -- a profile's tree, portable ----------------------------------------------------

_SPAWNED_MAIN = "__mp_main__."


def _flattened(root):
    """The tree under ``root`` as a list of ``(depth, (name, file, line),
    calls, total, {operation name: count})`` in preorder, with no
    reference to the process's objects (and no recursion: a tree as deep
    as the program recursed)."""
    from .profile import _described, operation_name
    flat = []
    pending = [(0, child) for child in reversed(list(root.children.values()))]
    while pending:
        depth, node = pending.pop()
        name, file, line = _described(node.callee)
        if name.startswith(_SPAWNED_MAIN):  # a spawned child imports the script as __mp_main__
            name = name[len(_SPAWNED_MAIN):]
        flat.append((depth, (name, file, line), node.calls, node.total,
                     {operation_name(op): count for op, count in node.ops.items()}))
        pending.extend((depth + 1, child) for child in reversed(list(node.children.values())))
    return flat
