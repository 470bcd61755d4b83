"""The on-disk cache of rewritten code (like ``__pycache__`` for templates).

Rewriting one function costs about a millisecond; a first overdubbed call
that reaches hundreds of functions would pay that for each of them in every
new process.  :func:`cassette.rewrite.template_for` asks :func:`load` before
rewriting and gives every real rewrite to :func:`store`; a load costs tens of
microseconds.  The bodies of the last entries read or written are kept in
memory by key (:func:`forget_recent` drops them, as a new process starts
without them): a program that execs the same generated source again and
again reads no file for it.

**The key** of an entry is a 160-bit BLAKE2b digest of

* an *environment fingerprint*, computed once per process: this module's
  :data:`FORMAT`, ``sys.implementation.cache_tag``, the full ``sys.version``
  (build included), ``sys.hexversion``, ``importlib.util.MAGIC_NUMBER``, the
  contents of every cassette source file that decides what a rewrite
  produces (:data:`REWRITER_SOURCES`: ``rewrite.py``, ``versions/*.py``,
  ``operations.py``, ``passes.py``, ``ir.py``, ``verify.py``,
  ``diskcache.py``, ``_builtins.py``) and the version and source files of the ``bytecode``
  package.  Any edit of the rewriter — a release or a developer's change —
  invalidates every entry.  If a file cannot be read the cache is off for
  the process;
* ``marshal.dumps(code, 2)`` of the original code object: bytecode,
  constants (nested code included), names, file name, first line, line and
  exception tables.  Format 2 writes no back-references, so the bytes do not
  depend on reference counts and are the same in every process;
* the sorted site kinds;
* for each ``(context class, Pass)``: the class's module, qualified name and
  module source digest, and the pass's identity — its transform's module,
  qualified name, the digest of the file its code comes from,
  ``marshal.dumps`` of its code and of its defaults.  A pass whose transform
  is not a plain function, is a closure, has no source file or has defaults
  that are not plain constants, and a context class defined inside a
  function (``<locals>`` in its qualified name) or in a module without a
  file, are *not* cached on disk (the in-memory cache still applies).

A pass's output must be a function of what the key covers: the function's
code, the pass's own module, the context class's module.  A pass that reads
anything else — another module's code, a global set at run time,
``func.__globals__``, a file, the environment — sets ``cache_key`` on the
Pass (or on its transform): a ``str`` or ``bytes`` that changes whenever
that input does (it then replaces the checks on the transform: closures and
callable objects are fine), or ``None`` to keep the pass out of the disk
cache altogether.  Source files are read once per process: a module edited
while a process that imported it runs is not noticed by that process.

**What is stored.**  The rewritten code with its constants split in three:
constants that are the original code's own objects are stored as their
index (so loading restores them *by identity*: nested code objects and
tuples are the original ones, and unmarshalling them is skipped);
:class:`cassette.markers.Slot` placeholders as their name (``Slot(name)`` is
interned) and :data:`cassette.markers.EXHAUSTED` as a marker; everything
else must be an immutable constant of the kinds the compiler makes (None,
Ellipsis, bool, int, float, complex, str, bytes, tuples and frozensets of
those, code objects whose constants are such).  Code holding anything else
— a pass's ``nooverdub(callee)``, a list, a function — is not stored:
marshal would copy or refuse it.

**Layout.**  One file per entry, ``<root>/<cache_tag>/<2 hex>/<38 hex>``
(the digest in hex; 256 buckets as in git's object store), containing
``MAGIC | key digest (20 bytes) | BLAKE2b-128 of the body | body`` where the
body is ``marshal.dumps((table, code))``.  A load checks the magic, that the
stored key is the key asked for, the body's checksum, that the body
unmarshals to a code object of the same name, file, first line and
signature as the original and that its last constant is the runtime slot;
anything wrong is a miss, the file is deleted and a fresh rewrite replaces
it.  No error of this module ever reaches the program.

``<root>`` is ``$CASSETTE_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/cassette``
(an absolute ``XDG_CACHE_HOME`` only, as the XDG spec says), else
``~/.cache/cassette``.  The root is created with mode 0700 and gets a
``CACHEDIR.TAG`` so that backup tools skip it.

**Opt-out.**  ``CASSETTE_NO_DISK_CACHE=1`` (any value but ``""``, ``0``,
``false``, ``no``, ``off``) turns loading and storing off.  A directory that
cannot be created or written silently turns storing off for the process
(loads still work: a read-only, pre-populated cache is fine).

**Size bound.**  ``CASSETTE_CACHE_MAX_MB`` (default 256; ``0`` turns the
cache off) bounds the total size of the entry files of one ``cache_tag``
directory.  It is enforced per bucket, cheaply: every :data:`CHECK_EVERY`
stores, the bucket just written is scanned, and when it holds more than
1/256 of the bound its least recently used entries are deleted until it
holds 80% of its share.  Entries are timestamped by modification time, which
a load refreshes when it is more than an hour old.  :func:`prune` applies the
bound to the whole directory at once; :func:`clear` empties it.  The bound
counts file sizes, not disk blocks.

**Concurrency.**  An entry is written to a temporary file in its bucket
(named by pid, thread and a counter) and moved into place with
``os.replace``, which is atomic: a reader sees a whole old file, a whole new
one or none.  Two processes storing the same key write identical contents;
the last rename wins.  A file deleted by eviction while another process
reads it is a miss for that process.  Temporary files left by a crashed
process are deleted by the next scan of their bucket after an hour.  A miss
*claims* the entry (see "claims" below) so that processes started together
— test workers, a process pool — rewrite each code object about once
between them: the others wait for the claimer's entry, never longer than
``CLAIM_PATIENCE`` and never for a process that is gone.

**Configuration** is read when this module is imported; :func:`configure`
reads the environment again (tests point the cache at a temporary
directory with it).  :data:`STATS` counts what happened in this process.

The cache can hold code injected by anyone who can write to its directory,
exactly like ``__pycache__``; it is private to its user by default.

:func:`directory` and :func:`usage` say where the cache is and how big it
is; :func:`prune` applies the size bound at once and :func:`clear` empties it.
"""

import hashlib
import importlib.util
import itertools
import marshal
import os
import sys
import threading
import time
import types
import weakref

from .markers import EXHAUSTED, RUNTIME, Slot
from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_O_CREAT = os.O_CREAT
_O_EXCL = os.O_EXCL
_O_RDONLY = os.O_RDONLY
_O_WRONLY = os.O_WRONLY
_environ = os.environ
_listdir = os.listdir
_makedirs = os.makedirs
_modules = sys.modules
_path_abspath = os.path.abspath
_path_dirname = os.path.dirname
_path_exists = os.path.exists
_path_expanduser = os.path.expanduser
_path_isabs = os.path.isabs
_path_isfile = os.path.isfile
_path_join = os.path.join
_path_relpath = os.path.relpath
_sep = os.sep
_util = importlib.util

# The functions this module calls, taken now: a program that replaces
# ``os.replace`` or ``marshal.loads`` while it runs overdubbed (CPython's
# tests mock such functions) must not see cassette's calls, nor change them.
_blake2b = hashlib.blake2b
_marshal_dumps = marshal.dumps
_marshal_loads = marshal.loads
_os_open = os.open
_os_read = os.read
_os_write = os.write
_os_close = os.close
_os_fstat = os.fstat
_os_replace = os.replace
_os_unlink = os.unlink
_os_mkdir = os.mkdir
_os_scandir = os.scandir
_os_utime = os.utime
_os_getpid = os.getpid
_get_ident = threading.get_ident
_time = time.time
_sleep = time.sleep
_os_kill = getattr(os, "kill", None)
_CodeType = types.CodeType
_FunctionType = types.FunctionType
_O_BINARY = getattr(os, "O_BINARY", 0)      # Windows: no newline translation

#: The version of the file format and of the key; bump it to invalidate
#: every entry after a change of either.
FORMAT = 1

MAGIC = b"CSTC\x01"
_DIGEST_SIZE = 20
_CHECK_SIZE = 16
_HEADER = len(MAGIC) + _DIGEST_SIZE + _CHECK_SIZE

#: cassette's modules whose source decides what a rewrite produces
#: (relative to the package; ``versions/*.py`` are added).
REWRITER_SOURCES = ("rewrite.py", "markers.py", "operations.py", "passes.py", "ir.py",
                    "verify.py", "diskcache.py", "_builtins.py")

#: Default bound of the cache, in megabytes (``CASSETTE_CACHE_MAX_MB``).
DEFAULT_MAX_MB = 256

#: A bucket is scanned for the size bound every this many stores.
CHECK_EVERY = 16

#: The number of buckets (first byte of the digest).
BUCKETS = 256

#: What the cache did in this process.
STATS = {
    "hits": 0,          # loads that returned code
    "misses": 0,        # loads that found no entry
    "corrupt": 0,       # entries found unreadable, deleted
    "stores": 0,        # entries written
    "uncacheable": 0,   # loads/stores skipped: no key (a pass or class the key cannot cover)
    "unstorable": 0,    # stores skipped: constants marshal cannot keep
    "evicted": 0,       # entries deleted by the size bound
    "waited": 0,        # misses another process was rewriting: loaded once it stored
    "errors": 0,        # anything else that went wrong (never raised)
}

_FALSE = frozenset({"", "0", "false", "no", "off"})
_MISSING = object()

# -- configuration -------------------------------------------------------------

_directory = None       # <root>/<cache_tag>, or None when the cache is off
_max_bytes = 0
_can_store = None       # None: not tried yet; False: storing failed, off
_made_buckets = set()
_stores = 0
_counter = itertools.count()


def default_root(environ=None):
    """The cache root the environment ``environ`` (default ``os.environ``)
    selects, whether or not the cache is enabled."""
    env = _environ if environ is None else environ
    explicit = env.get("CASSETTE_CACHE_DIR")
    if explicit:
        return _path_abspath(_path_expanduser(explicit))
    xdg = env.get("XDG_CACHE_HOME")
    if xdg and _path_isabs(xdg):
        return _path_join(xdg, "cassette")
    home = env.get("HOME") or _path_expanduser("~")
    return _path_join(home, ".cache", "cassette")


def _max_mb(env):
    text = env.get("CASSETTE_CACHE_MAX_MB", "")
    try:
        value = float(text) if text.strip() else DEFAULT_MAX_MB
    except ValueError:
        return DEFAULT_MAX_MB
    return value if value == value and value >= 0 else DEFAULT_MAX_MB


def configure(environ=None):
    """Read the configuration from ``environ`` (default ``os.environ``)
    again; returns the cache directory, or None when the cache is off."""
    global _directory, _max_bytes, _can_store, _stores, _last
    env = _environ if environ is None else environ
    _made_buckets.clear()
    forget_recent()
    _can_store = None
    _stores = 0
    _last = None
    _max_bytes = int(_max_mb(env) * 1024 * 1024)
    tag = sys.implementation.cache_tag
    off = env.get("CASSETTE_NO_DISK_CACHE", "").strip().lower() not in _FALSE
    if off or tag is None or _max_bytes <= 0:
        _directory = None
    else:
        _directory = _path_join(default_root(env), tag)
    return _directory


def directory():
    """The directory entries are kept in (``<root>/<cache_tag>``), or None
    when the disk cache is off."""
    return _directory


def max_bytes():
    """The size bound in bytes."""
    return _max_bytes


# -- the key -------------------------------------------------------------------

_fingerprint = None         # bytes once computed; b"" when it cannot be
_file_digests = {}          # path -> digest of its contents (once per process)


def _file_digest(path):
    digest = _file_digests.get(path)
    if digest is None:
        with open(path, "rb") as f:
            digest = _blake2b(f.read(), digest_size=_DIGEST_SIZE).digest()
        _file_digests[path] = digest
    return digest


def _rewriter_files():
    """The files whose contents go into the fingerprint: cassette's
    rewriter sources and the ``bytecode`` package's."""
    import bytecode

    package = _path_dirname(_path_abspath(__file__))
    files = [_path_join(package, name) for name in REWRITER_SOURCES]
    versions = _path_join(package, "versions")
    files += sorted(_path_join(versions, name) for name in _listdir(versions)
                    if name.endswith(".py"))
    bytecode_dir = _path_dirname(_path_abspath(bytecode.__file__))
    files += sorted(_path_join(bytecode_dir, name) for name in _listdir(bytecode_dir)
                    if name.endswith(".py"))
    # A module that is absent (verify.py before it existed) hashes as
    # absent; the rewriter itself must be there as source.
    return [path for path in files
            if _path_exists(path) or path.endswith(("rewrite.py", "diskcache.py"))]


def _compute_fingerprint():
    import bytecode

    h = _blake2b(digest_size=_DIGEST_SIZE)
    # (The interpreter's build is read when asked: tests stand in another.)
    for part in (str(FORMAT), sys.implementation.cache_tag, sys.version, str(sys.hexversion),
                 _util.MAGIC_NUMBER.hex(), getattr(bytecode, "__version__", "?")):
        _update(h, str(part).encode())
    package = _path_dirname(_path_abspath(__file__))
    for path in _rewriter_files():
        _update(h, _path_relpath(path, package).encode())
        h.update(_file_digest(path))
    return h.digest()


def fingerprint():
    """The environment fingerprint (see the module docstring), or ``b""``
    when it cannot be computed (then nothing is cached)."""
    global _fingerprint
    if _fingerprint is None:
        try:
            _fingerprint = _compute_fingerprint()
        except Exception:
            _fingerprint = b""
    return _fingerprint


def _update(h, data):
    h.update(len(data).to_bytes(8, "little"))
    h.update(data)


_kinds_parts = {}
_pass_parts = weakref.WeakKeyDictionary()
_class_parts = weakref.WeakKeyDictionary()


def _kinds_part(kinds):
    part = _kinds_parts.get(kinds)
    if part is None:
        part = _kinds_parts[kinds] = ",".join(sorted(kinds)).encode()
    return part


def _module_file_digest(module_name):
    """The digest of the file module ``module_name`` was loaded from, or
    None."""
    module = _modules.get(module_name)
    path = getattr(module, "__file__", None)
    if not isinstance(path, str) or not _path_isfile(path):
        return None
    return _file_digest(path)


def _class_part(ctx_type):
    try:
        return _class_parts[ctx_type]
    except KeyError:
        pass
    part = None
    module = getattr(ctx_type, "__module__", None)
    qualname = getattr(ctx_type, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and "<locals>" not in qualname:
        source = _module_file_digest(module)
        if source is not None:
            part = _marshal_dumps((module, qualname, source), 2)
    _class_parts[ctx_type] = part
    return part


def _explicit_key(pass_):
    explicit = pass_.__dict__.get("cache_key", _MISSING)
    if explicit is _MISSING:
        explicit = getattr(pass_.transform, "cache_key", _MISSING)
    return explicit


def _pass_part(pass_):
    try:
        return _pass_parts[pass_]
    except KeyError:
        pass
    part = None
    transform = pass_.transform
    explicit = _explicit_key(pass_)
    module = getattr(transform, "__module__", None)
    qualname = getattr(transform, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        module = qualname = None
    if explicit is _MISSING:
        code = getattr(transform, "__code__", None)
        if (type(transform) is _FunctionType and not transform.__closure__
                and module is not None and _path_isfile(code.co_filename)
                and _plain(transform.__defaults__)
                and _plain(tuple(sorted((transform.__kwdefaults__ or {}).items())))):
            part = _marshal_dumps(
                ("source", module, qualname, _file_digest(code.co_filename),
                 _code_part(code),
                 _marshal_dumps((transform.__defaults__,
                                 tuple(sorted((transform.__kwdefaults__ or {}).items()))), 2)),
                2)
    elif type(explicit) is str or type(explicit) is bytes:
        source = None if module is None else _module_file_digest(module)
        part = _marshal_dumps(("explicit", explicit, module, qualname, source), 2)
    _pass_parts[pass_] = part
    return part


def entry_key(code, kinds, passes=()):
    """The digest naming the entry of ``(code, kinds, passes)``, or None when
    that rewrite must not be cached on disk."""
    env = fingerprint()
    if not env:
        return None
    h = _blake2b(digest_size=_DIGEST_SIZE)
    h.update(env)
    _update(h, _kinds_part(kinds))
    _update(h, len(passes).to_bytes(4, "little"))
    for ctx_type, pass_ in passes:
        ctx_part = _class_part(ctx_type)
        pass_part = _pass_part(pass_)
        if ctx_part is None or pass_part is None:
            return None
        _update(h, ctx_part)
        _update(h, pass_part)
    _update(h, _code_part(code))
    return h.digest()


def _code_part(code):
    """``code`` as bytes that depend only on its contents: marshal format 2
    (no references, whose placement depends on reference counts), with
    the constants format 2 cannot hold (3.14's constant slices) spelled as
    tuples."""
    try:
        return _marshal_dumps(code, 2)
    except ValueError:
        return _marshal_dumps(_spelled(code), 2)


def _spelled(const):
    kind = type(const)
    if kind is _CodeType:
        return const.replace(co_consts=tuple(_spelled(c) for c in const.co_consts))
    if kind is slice:
        return ("slice", _spelled(const.start), _spelled(const.stop), _spelled(const.step))
    if kind is tuple or kind is frozenset:
        return kind(_spelled(c) for c in const)
    return const


# The key computed by the last load, for the store that follows it.
_last = None


def _key(code, kinds, passes):
    last = _last
    if last is not None and last[0] is code and last[1] == kinds and last[2] == passes:
        return last[3]
    return entry_key(code, kinds, passes)


def path_for(digest):
    """The file of the entry named ``digest`` (None when the cache is off)."""
    if _directory is None:
        return None
    name = digest.hex()
    return f"{_directory}{_sep}{name[:2]}{_sep}{name[2:]}"


def _bucket_of(digest):
    return f"{_directory}{_sep}{digest[:1].hex()}"


# -- encoding ------------------------------------------------------------------

_PLAIN_TYPES = frozenset({type(None), type(Ellipsis), bool, int, float, complex, str, bytes})


def _plain(value):
    """True for the immutable constants marshal keeps exactly."""
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return True
    if kind is tuple or kind is frozenset:
        return all(_plain(item) for item in value)
    if kind is _CodeType:
        return all(_plain(item) for item in value.co_consts)
    return False



_ORIGINAL, _SLOT, _EXHAUSTED = 0, 1, 2


def encode(code, rewritten):
    """The body of the entry of ``rewritten`` (made from ``code``), or None
    when a constant cannot be stored."""
    originals = {id(const): index for index, const in enumerate(code.co_consts)}
    consts = list(rewritten.co_consts)
    table = []
    for index, const in enumerate(consts):
        original = originals.get(id(const))
        if original is not None:
            table.append((index, _ORIGINAL, original))
        elif type(const) is Slot:
            table.append((index, _SLOT, const.name))
        elif const is EXHAUSTED:
            table.append((index, _EXHAUSTED, None))
        elif _plain(const):
            continue
        else:
            return None
        consts[index] = None
    return _marshal_dumps((tuple(table), rewritten.replace(co_consts=tuple(consts))))


def decode(body, code):
    """The rewritten code of an entry body, for the original ``code``, or
    None when the body does not hold one."""
    parts = _decoded_parts(body)
    return None if parts is None else _rewritten_for(parts, code)


def _decoded_parts(body):
    """``(table, stored code)`` of an entry body, or None."""
    table, stored = _marshal_loads(body)
    return (table, stored) if type(stored) is _CodeType else None


def _rewritten_for(parts, code):
    """The rewritten code ``parts`` hold, for the original ``code`` (its
    constants that could not be stored put back), or None when they were
    made for another code."""
    table, stored = parts
    consts = list(stored.co_consts)
    originals = code.co_consts
    for index, kind, value in table:
        if kind == _ORIGINAL:
            consts[index] = originals[value]
        elif kind == _SLOT:
            consts[index] = Slot(value)
        elif kind == _EXHAUSTED:
            consts[index] = EXHAUSTED
        else:
            return None
    if (not consts or consts[-1] is not RUNTIME
            or stored.co_name != code.co_name or stored.co_qualname != code.co_qualname
            or stored.co_filename != code.co_filename
            or stored.co_firstlineno != code.co_firstlineno
            or stored.co_argcount != code.co_argcount
            or stored.co_posonlyargcount != code.co_posonlyargcount
            or stored.co_kwonlyargcount != code.co_kwonlyargcount):
        return None
    return stored.replace(co_consts=tuple(consts))


# -- load and store --------------------------------------------------------------

def _read(path):
    """(contents, mtime) of ``path``, or None when it does not exist."""
    try:
        fd = _os_open(path, _O_RDONLY | _O_BINARY)
    except FileNotFoundError:
        return None
    try:
        st = _os_fstat(fd)
        size = st.st_size
        chunks = []
        while size > 0:
            chunk = _os_read(fd, size)
            if not chunk:
                break
            chunks.append(chunk)
            size -= len(chunk)
    finally:
        _os_close(fd)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    return data, st.st_mtime


def _discard(path):
    try:
        _os_unlink(path)
    except OSError:
        pass


#: The bodies of the entries this process read or wrote last, by digest: a
#: program that makes the same code again and again (``exec`` of generated
#: source: dataclasses, namedtuple) finds it here, without reading a file.
_recent_bodies = {}
_RECENT_BODIES_MAX = 256


#: The same entries decoded, by the contents of their original code
#: (:func:`_contents_key`): code made again from the same source is found
#: here without the digest, whose marshalling and hashing of the code cost
#: more than the lookup.
_recent_parts = {}


def _contents_key(code, kinds, passes):
    """The key of ``_recent_parts``: equal code objects (the same
    instructions, constants, names, lines and positions: what code equality
    compares) of the same file and qualified name have the same entry
    while the environment keeps its fingerprint."""
    return (fingerprint(), code, code.co_filename, code.co_qualname, kinds, passes)


def forget_recent():
    """Forget the entries kept in memory: loads read files again, as a new
    process does."""
    _recent_bodies.clear()
    _recent_parts.clear()


def _remember_body(digest, body, code, kinds, passes, parts=None):
    if len(_recent_bodies) >= _RECENT_BODIES_MAX:
        _recent_bodies.clear()
        _recent_parts.clear()
    _recent_bodies[digest] = body
    parts = parts or _decoded_parts(body)
    if parts is not None:
        _recent_parts[_contents_key(code, kinds, passes)] = parts


def load(code, kinds, passes):
    """The rewritten code stored for ``(code, kinds, passes)``, or None."""
    global _last
    if _directory is None:
        return None
    try:
        parts = _recent_parts.get(_contents_key(code, kinds, passes))
        if parts is not None:
            rewritten = _rewritten_for(parts, code)
            if rewritten is not None:
                STATS["hits"] += 1
                return rewritten
        digest = entry_key(code, kinds, passes)
        if digest is None:
            STATS["uncacheable"] += 1
            return None
        _last = (code, kinds, passes, digest)
        body = _recent_bodies.get(digest)
        if body is not None:
            parts = _decoded_parts(body)
            rewritten = None if parts is None else _rewritten_for(parts, code)
            if rewritten is not None:
                _remember_body(digest, body, code, kinds, passes, parts)
                STATS["hits"] += 1
                return rewritten
        path = path_for(digest)
        found = _read(path)
        if found is None:
            if _claim(code, kinds, passes, digest):
                found = _read(path)         # stored between the read and the claim
                if found is not None:
                    release(code, kinds, passes)
            elif _await_claimed(path, _claim_path(digest)):
                # Another process (or thread) was rewriting this very code:
                # its entry is what this one would have made.
                found = _read(path)
                if found is not None:
                    STATS["waited"] += 1
            else:
                _claim(code, kinds, passes, digest)     # taken over: this one rewrites
        if found is None:
            STATS["misses"] += 1
            return None
        data, mtime = found
    except Exception:
        STATS["errors"] += 1
        return None
    try:
        rewritten = None
        if (len(data) > _HEADER and data[:len(MAGIC)] == MAGIC
                and data[len(MAGIC):len(MAGIC) + _DIGEST_SIZE] == digest):
            body = data[_HEADER:]
            check = _blake2b(body, digest_size=_CHECK_SIZE).digest()
            if check == data[_HEADER - _CHECK_SIZE:_HEADER]:
                parts = _decoded_parts(body)
                rewritten = None if parts is None else _rewritten_for(parts, code)
                if rewritten is not None:
                    _remember_body(digest, body, code, kinds, passes, parts)
    except Exception:
        rewritten = None
    if rewritten is None:
        STATS["corrupt"] += 1
        _discard(path)
        return None
    STATS["hits"] += 1
    try:
        now = _time()
        if now - mtime > 3600:
            _os_utime(path)         # recently used: last to be evicted
    except Exception:
        pass
    return rewritten


# -- claims: one rewrite of a code object among processes started together --------
#
# On a miss, a load *claims* the entry: it creates ``.tmp-claim-<digest>``
# in the entry's bucket (``O_EXCL``: one creator wins) holding its pid, and
# its caller rewrites and stores (``store`` deletes the claim; ``release``
# does when the rewrite stores nothing).  A load that finds the entry claimed
# by another process or thread waits for the entry instead of rewriting the
# same code: eight workers importing one library rewrite each code object
# about once between them.  It stops waiting, and rewrites itself, when the
# claim goes without an entry, when its process is gone, or after
# ``CLAIM_PATIENCE`` seconds (a claimer stuck in a pass that waits for this
# process: never a deadlock).  Stale claim files go with old temporaries.

#: Longest a load waits for another process's rewrite, in seconds.
CLAIM_PATIENCE = 5.0
_CLAIM_POLL = 0.0005

# (id(code), kinds, passes) -> the claim file this process holds for it.
_held_claims = {}


def _claim_path(digest):
    hex_ = digest.hex()
    return _path_join(_directory, hex_[:2], f".tmp-claim-{hex_[2:]}")


def _claimer():
    return f"{_os_getpid()} {_get_ident()}".encode()


def _claim(code, kinds, passes, digest):
    """Claim the rewrite of ``(code, kinds, passes)``: True when this
    thread holds the claim (or claims cannot be made here: rewrite anyway),
    False when another one does."""
    if _can_store is False:
        return True
    path = _claim_path(digest)
    try:
        _ensure_bucket(_path_dirname(path))
        fd = _os_open(path, _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY, 0o600)
    except FileExistsError:
        holder = _read(path)
        return holder is not None and holder[0] == _claimer()
    except OSError:
        return True
    try:
        _os_write(fd, _claimer())
    finally:
        _os_close(fd)
    _held_claims[(id(code), kinds, passes)] = path
    return True


def release(code, kinds, passes):
    """Give up this thread's claim of ``(code, kinds, passes)``, if any (the
    rewrite is stored, or will not be)."""
    path = _held_claims.pop((id(code), kinds, passes), None)
    if path is not None:
        _discard(path)


def _await_claimed(path, claim):
    """Wait until the entry at ``path`` exists (True) or the ``claim`` on it
    is gone, dead or too old to wait for (False)."""
    deadline = _time() + CLAIM_PATIENCE
    while True:
        if _path_exists(path):
            return True
        holder = _read(claim)
        if holder is None:
            return _path_exists(path)       # released: stored, or nothing to store
        if not _alive(holder[0]) or _time() > deadline:
            _discard(claim)                 # taken over: this process rewrites
            return False
        _sleep(_CLAIM_POLL)


def _alive(claimer):
    """Whether the process that wrote claim contents ``claimer`` runs."""
    try:
        pid = int(claimer.split()[0])
    except (ValueError, IndexError):
        return False
    if _os_kill is None:
        return True
    try:
        _os_kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True         # another user's process (permission denied): alive
    return True


def _ensure_bucket(bucket):
    """Create the bucket directory (and the root) if needed."""
    if bucket in _made_buckets:
        return
    try:
        _os_mkdir(bucket, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        _make_root()
        try:
            _os_mkdir(bucket, 0o700)
        except FileExistsError:
            pass
    _made_buckets.add(bucket)


def _make_root():
    root = _path_dirname(_directory)
    _makedirs(root, mode=0o700, exist_ok=True)
    tag = _path_join(root, "CACHEDIR.TAG")
    if not _path_exists(tag):
        _write_atomically(tag, b"Signature: 8a477f597d28d172789f06886806bc55\n"
                               b"# This file is a cache directory tag created by cassette.\n"
                               b"# For information about cache directory tags, see "
                               b"https://bford.info/cachedir/\n")
    try:
        _os_mkdir(_directory, 0o700)
    except FileExistsError:
        pass


def _write_atomically(path, data):
    temporary = (f"{path.rpartition(_sep)[0]}{_sep}.tmp-{_os_getpid()}-{_get_ident()}"
                 f"-{next(_counter)}")
    fd = _os_open(temporary, _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                written = _os_write(fd, view)
                view = view[written:]
        finally:
            _os_close(fd)
        _os_replace(temporary, path)
    except BaseException:
        _discard(temporary)
        raise


def store(code, kinds, passes, rewritten):
    """Remember ``rewritten`` for ``(code, kinds, passes)``."""
    global _can_store, _stores
    if _directory is None or _can_store is False:
        return
    try:
        digest = _key(code, kinds, passes)
        if digest is None:
            STATS["uncacheable"] += 1
            return
        body = encode(code, rewritten)
        if body is None:
            STATS["unstorable"] += 1
            return
        check = _blake2b(body, digest_size=_CHECK_SIZE).digest()
        path = path_for(digest)
        bucket = _bucket_of(digest)
        _ensure_bucket(bucket)
        _write_atomically(path, b"".join((MAGIC, digest, check, body)))
        release(code, kinds, passes)
        _remember_body(digest, body, code, kinds, passes)
        _can_store = True
        STATS["stores"] += 1
        _stores += 1
        if _stores % CHECK_EVERY == 0:
            _bound_bucket(bucket)
    except OSError:
        # Not writable (permissions, read-only or full file system): stop
        # trying for this process.  A failure after a success is transient.
        STATS["errors"] += 1
        if not _can_store:
            _can_store = False
    except Exception:
        STATS["errors"] += 1


# -- the size bound ----------------------------------------------------------------

_STALE_TEMPORARY = 3600.0


def _scan(bucket):
    """[(mtime, size, path)] of the entries of ``bucket``; deletes
    temporary files older than an hour."""
    entries = []
    now = _time()
    try:
        iterator = _os_scandir(bucket)
    except OSError:
        return entries
    with iterator:
        for item in iterator:
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if item.name.startswith(".tmp-"):
                if now - st.st_mtime > _STALE_TEMPORARY:
                    _discard(item.path)
                continue
            if item.is_file(follow_symlinks=False):
                entries.append((st.st_mtime, st.st_size, item.path))
    return entries


def _evict(entries, total, target):
    """Delete the oldest of ``entries`` until ``total`` is at most ``target``;
    returns the new total."""
    entries.sort()
    for _mtime, size, path in entries:
        if total <= target:
            break
        try:
            _os_unlink(path)
            STATS["evicted"] += 1
        except FileNotFoundError:
            pass            # another process evicted it
        except OSError:
            continue
        total -= size
    return total


def _bound_bucket(bucket):
    share = _max_bytes / BUCKETS
    entries = _scan(bucket)
    total = sum(size for _mtime, size, _path in entries)
    if total > share:
        _evict(entries, total, 0.8 * share)


def _buckets():
    if _directory is None:
        return []
    try:
        with _os_scandir(_directory) as iterator:
            return [item.path for item in iterator
                    if len(item.name) == 2 and item.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def usage():
    """``(entries, bytes)`` in the cache directory."""
    entries = [e for bucket in _buckets() for e in _scan(bucket)]
    return len(entries), sum(size for _mtime, size, _path in entries)


def prune(limit=None):
    """Apply the size bound to the whole cache directory at once: when it
    holds more than ``limit`` bytes (default: the configured bound), delete
    the least recently used entries until it holds 80% of it.  Returns
    ``(entries, bytes)`` left."""
    limit = _max_bytes if limit is None else limit
    entries = [e for bucket in _buckets() for e in _scan(bucket)]
    total = sum(size for _mtime, size, _path in entries)
    if total > limit:
        total = _evict(entries, total, 0.8 * limit)
        entries = [e for e in entries if _path_exists(e[2])]
    return len(entries), total


def clear():
    """Delete every entry of the cache directory; returns how many."""
    removed = 0
    for bucket in _buckets():
        for _mtime, _size, path in _scan(bucket):
            try:
                _os_unlink(path)
                removed += 1
            except OSError:
                pass
    global _last
    _last = None
    return removed


configure()

