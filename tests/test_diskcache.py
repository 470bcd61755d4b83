"""The on-disk cache of rewritten code (cassette/diskcache.py): what comes
back from disk is the rewrite, the key covers everything a rewrite depends
on, damage is a miss, the opt-out writes nothing, the size bound holds and
concurrent processes do not corrupt it."""

import json
import marshal
import os
import subprocess
import sys
import textwrap
import time
import types

import pytest

import cassette
from cassette import Intercept, diskcache, rewrite

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL = rewrite.kinds_for(Intercept.ALL)
CALLS = rewrite.kinds_for(Intercept.CALLS)
_ENV_NAMES = ("CASSETTE_CACHE_DIR", "CASSETTE_NO_DISK_CACHE", "CASSETTE_CACHE_MAX_MB")


@pytest.fixture
def cache(tmp_path):
    """A fresh, empty cache directory for this test (the environment and
    the configuration are restored afterwards)."""
    saved = {name: os.environ.get(name) for name in _ENV_NAMES}
    os.environ["CASSETTE_CACHE_DIR"] = str(tmp_path / "cache")
    os.environ.pop("CASSETTE_NO_DISK_CACHE", None)
    os.environ.pop("CASSETTE_CACHE_MAX_MB", None)
    diskcache.configure()
    for name in diskcache.STATS:
        diskcache.STATS[name] = 0
    try:
        yield tmp_path / "cache" / sys.implementation.cache_tag
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        diskcache.configure()


def entry_files(directory):
    """The entry files under a cache directory."""
    found = []
    for base, _dirs, files in os.walk(directory):
        found += [os.path.join(base, f) for f in files
                  if not f.startswith(".tmp-") and f != "CACHEDIR.TAG"]
    return found


def child_env(tmp_path, **extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), ROOT] + (
        [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(extra)
    return env


def run_child(tmp_path, script, env):
    completed = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                               text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


def copy_of(code):
    """An equal code object that is not ``code`` (as a new process has)."""
    copy = marshal.loads(marshal.dumps(code))
    assert copy is not code and copy == code
    return copy


# -- sample functions -----------------------------------------------------------

def sample_loops(xs):
    total = 0
    for x in xs:
        if x % 2:
            continue
        total += x * 2
    return total


def sample_try(x):
    try:
        return 10 // x
    except ZeroDivisionError as error:
        return str(error)
    finally:
        x = None


def sample_nested(n):
    squares = [i * i for i in range(n)]

    def inner(k):
        return k + n

    total = sum(inner(s) for s in squares)
    return total, {k: v for k, v in zip("abc", squares)}, (1.5, "const", None, b"b")


class Sample:
    def __init__(self, value):
        self.value = value

    def describe(self, suffix):
        with open(__file__) as f:
            first = f.readline()
        return f"{super().__repr__()[:1]}{self.value}{suffix}{len(first)}"


async def sample_async(x):
    return x + 1


SAMPLES = [sample_loops, sample_try, sample_nested, Sample.describe, sample_async]


def assert_same_code(loaded, fresh, original):
    for name in ("co_code", "co_exceptiontable", "co_linetable", "co_names", "co_varnames",
                 "co_freevars", "co_cellvars", "co_stacksize", "co_flags", "co_qualname",
                 "co_filename", "co_firstlineno", "co_argcount", "co_kwonlyargcount"):
        assert getattr(loaded, name) == getattr(fresh, name), name
    assert list(loaded.co_positions()) == list(fresh.co_positions())
    assert len(loaded.co_consts) == len(fresh.co_consts)
    originals = original.co_consts
    for mine, theirs in zip(loaded.co_consts, fresh.co_consts):
        if (type(theirs) is rewrite.Slot or theirs is rewrite.EXHAUSTED
                or any(theirs is o for o in originals)):
            assert mine is theirs           # placeholders and the original's own objects
        else:
            assert type(mine) is type(theirs) and mine == theirs
    assert loaded.co_consts[-1] is rewrite.RUNTIME
    assert loaded == fresh


# -- round trip ---------------------------------------------------------------------

@pytest.mark.parametrize("rows", [Intercept.CALLS, Intercept.ALL], ids=["calls", "all"])
@pytest.mark.parametrize("function", SAMPLES, ids=lambda f: f.__qualname__)
def test_a_stored_rewrite_loads_back_equal_to_the_rewrite(cache, function, rows):
    kinds = rewrite.kinds_for(rows)
    code = function.__code__
    fresh = rewrite._rewritten_code(code, kinds, (), function)
    assert diskcache.load(code, kinds, ()) is None
    diskcache.store(code, kinds, (), fresh)
    assert diskcache.STATS["stores"] == 1 and len(entry_files(cache)) == 1
    loaded = diskcache.load(code, kinds, ())
    assert loaded is not None and diskcache.STATS["hits"] == 1
    assert_same_code(loaded, fresh, code)
    # A new process has an equal, not identical, original: same entry, and
    # the constants come from *that* code object.
    other = copy_of(code)
    again = diskcache.load(other, kinds, ())
    assert again == fresh
    nested = [c for c in other.co_consts if isinstance(c, types.CodeType)]
    assert all(any(c is n for n in nested) for c in again.co_consts
               if isinstance(c, types.CodeType))


def test_the_for_step_marker_and_nested_code_round_trip(cache):
    fresh = rewrite._rewritten_code(sample_loops.__code__, ALL, (), sample_loops)
    assert rewrite.EXHAUSTED in fresh.co_consts
    diskcache.store(sample_loops.__code__, ALL, (), fresh)
    loaded = diskcache.load(sample_loops.__code__, ALL, ())
    assert rewrite.EXHAUSTED in loaded.co_consts
    nested_fresh = rewrite._rewritten_code(sample_nested.__code__, ALL, (), sample_nested)
    diskcache.store(sample_nested.__code__, ALL, (), nested_fresh)
    loaded = diskcache.load(sample_nested.__code__, ALL, ())
    inner = [c for c in loaded.co_consts if isinstance(c, types.CodeType)]
    assert inner and all(any(c is o for o in sample_nested.__code__.co_consts) for c in inner)


def test_template_for_loads_what_an_earlier_rewrite_stored(cache):
    first = rewrite.template_for(copy_of(sample_try.__code__), ALL)
    assert diskcache.STATS["stores"] == 1 and diskcache.STATS["hits"] == 0
    second = rewrite.template_for(copy_of(sample_try.__code__), ALL)
    assert diskcache.STATS["hits"] == 1 and diskcache.STATS["stores"] == 1
    assert second.code == first.code and second.slot_indices == first.slot_indices


class Recorder(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata.append(getattr(f, "__name__", repr(f)))


def test_code_loaded_from_disk_runs_like_the_plain_call(cache):
    expected = sample_nested(5)
    seen = []
    for _ in range(2):
        # A fresh function object with fresh code: no in-memory template.
        function = types.FunctionType(copy_of(sample_nested.__code__), globals())
        trace = []
        assert cassette.overdub(Recorder(metadata=trace), function, 5) == expected
        seen.append(trace)
    assert diskcache.STATS["hits"] >= 1
    assert seen[0] == seen[1] and seen[0]


PROGRAM = '''
import statistics


def helper(x):
    return [y * 2 for y in range(x)]


class Accumulator:
    def __init__(self):
        self.items = []

    def add(self, value):
        self.items.append(value)
        return self


def main(n):
    acc = Accumulator()
    for i in range(n):
        try:
            acc.add(sum(helper(i)) / (i - 3))
        except ZeroDivisionError:
            acc.add(None)
    with open(__file__) as f:
        first = f.readline()
    values = [x for x in acc.items if x is not None]
    return acc.items, statistics.mean(v for v in values), first
'''

RUNNER = '''
import json
import sys

import cassette
from cassette import diskcache

import dc_program


class Touch(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata.append(getattr(f, "__qualname__", type(f).__name__))


plain = dc_program.main(8)
ctx = Touch(metadata=[])
dubbed = cassette.overdub(ctx, dc_program.main, 8)
print(json.dumps({"same": repr(plain) == repr(dubbed), "trace": ctx.metadata,
                  "stats": diskcache.STATS, "dir": diskcache.directory()}))
'''


def test_a_new_process_runs_the_stored_code(tmp_path):
    (tmp_path / "dc_program.py").write_text(PROGRAM)
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    cache_dir = tmp_path / "cache"
    env = child_env(tmp_path, CASSETTE_CACHE_DIR=str(cache_dir))
    env.pop("CASSETTE_NO_DISK_CACHE", None)
    cold = run_child(tmp_path, runner, env)
    warm = run_child(tmp_path, runner, env)
    assert cold["dir"] == str(cache_dir / sys.implementation.cache_tag)
    assert cold["same"] and warm["same"]
    assert cold["stats"]["stores"] > 5 and cold["stats"]["hits"] == 0
    assert warm["stats"]["hits"] == cold["stats"]["stores"]
    assert warm["stats"]["stores"] == 0 and warm["stats"]["corrupt"] == 0
    assert warm["trace"] == cold["trace"] and len(warm["trace"]) > 20
    files = entry_files(cache_dir)
    assert len(files) == cold["stats"]["stores"]

    # Opted out: the same run, nothing read or written.
    quiet = run_child(tmp_path, runner, dict(env, CASSETTE_NO_DISK_CACHE="1"))
    assert quiet["same"] and quiet["trace"] == cold["trace"] and quiet["dir"] is None
    assert not any(quiet["stats"].values())
    assert sorted(entry_files(cache_dir)) == sorted(files)


# -- the key ----------------------------------------------------------------------

class PassCtx(cassette.Context):
    pass


class OtherPassCtx(cassette.Context):
    pass


def _transform_a(ctx_type, func, code):
    return code


def _transform_b(ctx_type, func, code):
    return code


pass_a = cassette.Pass(_transform_a)
pass_b = cassette.Pass(_transform_b)


def test_each_key_component_changes_the_key(cache, monkeypatch):
    code = sample_loops.__code__
    base = diskcache.entry_key(code, ALL)
    assert base is not None and len(base) == 20
    assert diskcache.entry_key(copy_of(code), ALL) == base      # by content
    assert diskcache.entry_key(code, CALLS) != base              # kinds

    source = "def f(x):\n    return x + 1\n"

    def compiled(text, filename="/somewhere/module.py"):
        return compile(text, filename, "exec").co_consts[0]

    keys = {
        diskcache.entry_key(compiled(source), ALL),
        diskcache.entry_key(compiled(source.replace("1", "2")), ALL),      # source
        diskcache.entry_key(compiled("\n" + source), ALL),                 # line numbers
        diskcache.entry_key(compiled(source, "/elsewhere/module.py"), ALL),  # file name
        diskcache.entry_key(compiled(source.replace("x", "y")), ALL),      # names
    }
    assert len(keys) == 5

    with_passes = {
        diskcache.entry_key(code, ALL, ((PassCtx, pass_a),)),
        diskcache.entry_key(code, ALL, ((PassCtx, pass_b),)),
        diskcache.entry_key(code, ALL, ((OtherPassCtx, pass_a),)),
        diskcache.entry_key(code, ALL, ((PassCtx, pass_a), (OtherPassCtx, pass_b))),
        diskcache.entry_key(code, ALL, ((OtherPassCtx, pass_b), (PassCtx, pass_a))),
    }
    assert None not in with_passes and base not in with_passes and len(with_passes) == 5
    assert diskcache.entry_key(code, ALL, ((PassCtx, pass_a),)) == diskcache.entry_key(
        code, ALL, ((PassCtx, pass_a),))

    # A different Python build.
    monkeypatch.setattr(diskcache, "_fingerprint", None)
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    assert diskcache.entry_key(code, ALL) not in (base, None)
    monkeypatch.undo()

    # A different rewriter (an edit of rewrite.py, a new cassette release).
    rewrite_py = os.path.join(os.path.dirname(rewrite.__file__), "rewrite.py")
    diskcache.fingerprint()
    monkeypatch.setattr(diskcache, "_fingerprint", None)
    monkeypatch.setitem(diskcache._file_digests, rewrite_py, b"\0" * 20)
    assert diskcache.entry_key(code, ALL) not in (base, None)
    monkeypatch.undo()
    monkeypatch.setattr(diskcache, "_fingerprint", None)
    monkeypatch.setattr(diskcache, "FORMAT", diskcache.FORMAT + 1)
    assert diskcache.entry_key(code, ALL) not in (base, None)
    monkeypatch.undo()
    assert diskcache.entry_key(code, ALL) == base


def test_an_entry_of_another_version_is_not_served(cache, monkeypatch):
    code = sample_try.__code__
    diskcache.store(code, ALL, (), rewrite._rewritten_code(code, ALL, (), sample_try))
    assert diskcache.load(code, ALL, ()) is not None
    monkeypatch.setattr(diskcache, "_fingerprint", b"another cassette version")
    monkeypatch.setattr(diskcache, "_last", None)
    assert diskcache.load(code, ALL, ()) is None
    assert diskcache.STATS["misses"] == 1 and len(entry_files(cache)) == 1


def test_a_rewrite_under_a_pass_is_not_served_without_it(cache):
    code = sample_loops.__code__
    fresh = rewrite._rewritten_code(code, ALL, (), sample_loops)
    with_context = fresh.replace(co_consts=fresh.co_consts[:-1] + (rewrite.CONTEXT, rewrite.RUNTIME))
    passes = ((PassCtx, pass_a),)
    diskcache.store(code, ALL, passes, with_context)
    assert diskcache.load(code, ALL, ()) is None
    assert diskcache.load(code, ALL, ((PassCtx, pass_b),)) is None
    loaded = diskcache.load(code, ALL, passes)
    assert loaded == with_context and loaded.co_consts[-2] is rewrite.CONTEXT


def _exec_transform():
    namespace = {}
    exec("def transform(ctx_type, func, code):\n    return code\n", namespace)
    return namespace["transform"]


class _CallableTransform:
    def __call__(self, ctx_type, func, code):
        return code


def test_passes_the_key_cannot_cover_are_not_cached(cache):
    code = sample_loops.__code__
    factor = 3

    def closure(ctx_type, func, code):
        return code if factor else None

    class LocalCtx(cassette.Context):
        pass

    uncacheable = [
        ((PassCtx, cassette.Pass(closure)),),                   # a closure
        ((PassCtx, cassette.Pass(_exec_transform())),),         # no source file
        ((PassCtx, cassette.Pass(_CallableTransform())),),      # not a function
        ((LocalCtx, pass_a),),                                  # a class made in a function
        ((PassCtx, cassette.Pass(lambda c, f, b, extra=[]: b)),),  # a mutable default
    ]
    opted_out = cassette.Pass(_transform_a)
    opted_out.cache_key = None
    uncacheable.append(((PassCtx, opted_out),))
    for passes in uncacheable:
        assert diskcache.entry_key(code, ALL, passes) is None, passes
        fresh = rewrite._rewritten_code(code, ALL, (), sample_loops)
        diskcache.store(code, ALL, passes, fresh)
        assert diskcache.load(code, ALL, passes) is None
    assert entry_files(cache) == []
    assert diskcache.STATS["uncacheable"] == 2 * len(uncacheable)


def test_an_explicit_cache_key_makes_a_pass_cacheable_and_keys_it(cache):
    code = sample_loops.__code__

    def make(lines):
        def transform(ctx_type, func, code):
            return code if lines else code
        pass_ = cassette.Pass(transform)
        pass_.cache_key = repr(sorted(lines))
        return pass_

    one, same, two = make({1, 2}), make({2, 1}), make({3})
    key = diskcache.entry_key(code, ALL, ((PassCtx, one),))
    assert key is not None
    assert diskcache.entry_key(code, ALL, ((PassCtx, same),)) == key
    assert diskcache.entry_key(code, ALL, ((PassCtx, two),)) not in (key, None)


def test_constants_marshal_cannot_keep_are_not_stored(cache):
    code = sample_loops.__code__
    fresh = rewrite._rewritten_code(code, ALL, (), sample_loops)
    for extra in (rewrite.NoOverdub(print), [], {1: 2}, (1, [2]), print, object()):
        odd = fresh.replace(co_consts=fresh.co_consts[:-1] + (extra, rewrite.RUNTIME))
        diskcache.store(code, CALLS, (), odd)
    assert entry_files(cache) == [] and diskcache.STATS["unstorable"] == 6
    assert diskcache.load(code, CALLS, ()) is None


def _note_call(ctx, name):
    ctx.metadata.append(name)


def _nooverdub_transform(ctx_type, func, code):
    from bytecode import Instr
    from cassette import ir
    start = next(i for i, e in enumerate(code) if isinstance(e, Instr) and e.name == "RESUME") + 1
    code[start:start] = ir.call_statement(ir.nooverdub(_note_call), ir.CONTEXT, code.name)
    return code


nooverdub_pass = cassette.Pass(_nooverdub_transform)


def test_a_pass_with_nooverdub_runs_but_is_not_stored(cache):
    pytest.importorskip("cassette.verify")
    calls = []
    assert diskcache.entry_key(sample_loops.__code__, CALLS, ((PassCtx, nooverdub_pass),))
    for _ in range(2):
        function = types.FunctionType(copy_of(sample_loops.__code__), globals())
        assert cassette.overdub(PassCtx(metadata=calls, pass_=nooverdub_pass),
                                function, [1, 2, 4]) == 12
    assert calls == ["sample_loops", "sample_loops"]
    assert diskcache.STATS["unstorable"] == 2 and diskcache.STATS["stores"] == 0


# -- damage -------------------------------------------------------------------------

def _stored_entry(code=None, function=sample_try):
    """An entry stored, as a later process finds it: on disk only."""
    code = code or function.__code__
    fresh = rewrite._rewritten_code(code, ALL, (), function)
    diskcache.store(code, ALL, (), fresh)
    diskcache.forget_recent()
    return code, fresh, diskcache.path_for(diskcache.entry_key(code, ALL))


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage", "header"])
def test_a_damaged_entry_is_a_miss_and_is_replaced(cache, damage):
    code, fresh, path = _stored_entry()
    with open(path, "rb") as f:
        data = f.read()
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data = data[:-10] + bytes([data[-10] ^ 0x40]) + data[-9:]
    elif damage == "empty":
        data = b""
    elif damage == "garbage":
        data = os.urandom(len(data))
    else:
        data = diskcache.MAGIC + b"\1" * 20 + data[len(diskcache.MAGIC) + 20:]
    with open(path, "wb") as f:
        f.write(data)
    diskcache.STATS["stores"] = 0
    assert diskcache.load(code, ALL, ()) is None
    assert diskcache.STATS["corrupt"] == 1 and not os.path.exists(path)
    # template_for rewrites it and stores it again
    template = rewrite.template_for(copy_of(code), ALL)
    assert template.code == fresh
    assert diskcache.STATS["stores"] == 1 and os.path.exists(path)
    assert diskcache.load(code, ALL, ()) == fresh


def test_a_valid_entry_of_another_function_under_this_key_is_refused(cache):
    code, _fresh, path = _stored_entry()
    other = rewrite._rewritten_code(sample_loops.__code__, ALL, (), sample_loops)
    body = diskcache.encode(sample_loops.__code__, other)
    check = diskcache._blake2b(body, digest_size=16).digest()
    digest = diskcache.entry_key(code, ALL)
    with open(path, "wb") as f:
        f.write(diskcache.MAGIC + digest + check + body)
    assert diskcache.load(code, ALL, ()) is None
    assert diskcache.STATS["corrupt"] == 1


def test_no_error_of_the_cache_reaches_the_program(cache, monkeypatch):
    code = sample_try.__code__
    fresh = rewrite._rewritten_code(code, ALL, (), sample_try)

    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(diskcache, "_read", boom)
    monkeypatch.setattr(diskcache, "encode", boom)
    assert diskcache.load(code, ALL, ()) is None
    diskcache.store(code, ALL, (), fresh)
    assert diskcache.STATS["errors"] == 2
    monkeypatch.setattr(diskcache, "_read", lambda path: (_ for _ in ()).throw(RecursionError()))
    assert diskcache.load(code, ALL, ()) is None


# -- configuration ------------------------------------------------------------------

def test_the_suite_never_uses_the_home_directory():
    directory = diskcache.directory()
    if directory is not None:
        assert not directory.startswith(os.path.join(os.path.expanduser("~"), ".cache"))
        assert os.environ.get("CASSETTE_CACHE_DIR")


def test_the_default_location():
    tag = sys.implementation.cache_tag
    assert diskcache.default_root({"CASSETTE_CACHE_DIR": "/x/y", "XDG_CACHE_HOME": "/xdg",
                                   "HOME": "/home/u"}) == "/x/y"
    assert diskcache.default_root({"XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"}) == "/xdg/cassette"
    assert diskcache.default_root({"XDG_CACHE_HOME": "relative", "HOME": "/home/u"}) == (
        "/home/u/.cache/cassette")
    assert diskcache.default_root({"HOME": "/home/u"}) == "/home/u/.cache/cassette"
    assert diskcache.default_root({"CASSETTE_CACHE_DIR": "rel"}) == os.path.abspath("rel")
    try:
        assert diskcache.configure({"HOME": "/home/u"}) == f"/home/u/.cache/cassette/{tag}"
        assert diskcache.directory() == f"/home/u/.cache/cassette/{tag}"
        assert diskcache.max_bytes() == diskcache.DEFAULT_MAX_MB * 1024 * 1024
        assert diskcache.configure({"HOME": "/h", "CASSETTE_CACHE_MAX_MB": "1.5"}) is not None
        assert diskcache.max_bytes() == int(1.5 * 1024 * 1024)
        for value in ("0", "false", "", "no"):
            assert diskcache.configure({"HOME": "/h", "CASSETTE_NO_DISK_CACHE": value})
        for value in ("1", "yes", "true"):
            assert diskcache.configure({"HOME": "/h", "CASSETTE_NO_DISK_CACHE": value}) is None
        assert diskcache.configure({"HOME": "/h", "CASSETTE_CACHE_MAX_MB": "0"}) is None
    finally:
        diskcache.configure()


def test_the_opt_out_reads_and_writes_nothing(cache):
    os.environ["CASSETTE_NO_DISK_CACHE"] = "1"
    assert diskcache.configure() is None
    code = sample_loops.__code__
    fresh = rewrite._rewritten_code(code, ALL, (), sample_loops)
    diskcache.store(code, ALL, (), fresh)
    assert diskcache.load(code, ALL, ()) is None
    rewrite.template_for(copy_of(code), ALL)
    assert not cache.parent.exists() and not any(diskcache.STATS.values())


def test_an_unwritable_location_turns_storing_off_silently(cache, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    os.environ["CASSETTE_CACHE_DIR"] = str(blocker / "cache")
    diskcache.configure()
    code = sample_loops.__code__
    fresh = rewrite._rewritten_code(code, ALL, (), sample_loops)
    diskcache.store(code, ALL, (), fresh)
    diskcache.store(code, ALL, (), fresh)
    assert diskcache.STATS["errors"] == 1 and diskcache.STATS["stores"] == 0
    assert diskcache.load(code, ALL, ()) is None
    assert cassette.overdub(Recorder(metadata=[]), sample_loops, [2, 3]) == 4


def test_the_root_is_private_and_tagged(cache):
    _stored_entry()
    root = cache.parent
    assert (root / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert os.stat(root).st_mode & 0o077 == 0


# -- the size bound ------------------------------------------------------------------

def _fill(count, start=0):
    """Store ``count`` small entries of distinct code objects."""
    for i in range(start, start + count):
        code = compile(f"def f{i}(x):\n    return x + {i}\n", "/bench/fill.py",
                       "exec").co_consts[0]
        diskcache.store(code, CALLS, (), code.replace(co_consts=code.co_consts + (rewrite.RUNTIME,)))


def _bucket_sizes(directory):
    sizes = {}
    for path in entry_files(directory):
        bucket = os.path.basename(os.path.dirname(path))
        sizes[bucket] = sizes.get(bucket, 0) + os.path.getsize(path)
    return sizes


def test_stores_keep_every_bucket_within_its_share(cache, monkeypatch):
    monkeypatch.setattr(diskcache, "CHECK_EVERY", 1)
    os.environ["CASSETTE_CACHE_MAX_MB"] = "0.1"     # about two entries a bucket
    diskcache.configure()
    _fill(700)
    share = diskcache.max_bytes() / diskcache.BUCKETS
    sizes = _bucket_sizes(cache)
    assert diskcache.STATS["evicted"] > 0
    assert max(sizes.values()) <= share
    assert sum(sizes.values()) <= diskcache.max_bytes()
    assert len(entry_files(cache)) == 700 - diskcache.STATS["evicted"]


def test_the_bound_is_checked_every_few_stores(cache, monkeypatch):
    os.environ["CASSETTE_CACHE_MAX_MB"] = "0.01"      # 40 bytes a bucket: every check empties it
    diskcache.configure()
    _fill(diskcache.CHECK_EVERY * 4)
    assert diskcache.STATS["evicted"] >= 4


def test_prune_deletes_the_least_recently_used_first(cache):
    _fill(60)
    files = entry_files(cache)
    now = time.time()
    ages = {}
    for rank, path in enumerate(sorted(files)):
        ages[path] = now - 10 * (rank + 1)
        os.utime(path, (ages[path], ages[path]))
    total = sum(os.path.getsize(p) for p in files)
    left, size = diskcache.prune(total // 2)
    survivors = entry_files(cache)
    assert size <= 0.8 * (total // 2) and left == len(survivors)
    oldest_survivor = min(ages[p] for p in survivors)
    assert all(ages[p] < oldest_survivor for p in files if p not in survivors)
    assert diskcache.usage() == (left, size)
    assert diskcache.clear() == left and entry_files(cache) == []


def test_a_load_refreshes_an_old_entry_and_old_temporaries_go(cache):
    code, _fresh, path = _stored_entry()
    old = time.time() - 7200
    os.utime(path, (old, old))
    stale = os.path.join(os.path.dirname(path), ".tmp-1-2-3")
    with open(stale, "wb") as f:
        f.write(b"left by a crash")
    os.utime(stale, (old, old))
    fresh_tmp = os.path.join(os.path.dirname(path), ".tmp-4-5-6")
    with open(fresh_tmp, "wb") as f:
        f.write(b"being written")
    assert diskcache.load(code, ALL, ()) is not None
    assert os.path.getmtime(path) > old + 3600
    diskcache.prune()
    assert not os.path.exists(stale) and os.path.exists(fresh_tmp)


# -- concurrency --------------------------------------------------------------------

HAMMER = '''
import json
import os
import sys

from cassette import diskcache, rewrite
import dc_program
import statistics

from cassette import Intercept

role = sys.argv[1]
kinds = rewrite.kinds_for(Intercept.ALL)
functions = [dc_program.helper, dc_program.main, dc_program.Accumulator.add,
             dc_program.Accumulator.__init__, statistics.mean, statistics._sum,
             statistics.fmean, statistics.median, statistics.variance, statistics._ss]
fresh = {f: rewrite._rewritten_code(f.__code__, kinds, (), f) for f in functions}
wrong = 0
for round_ in range(200):
    for f in functions:
        loaded = diskcache.load(f.__code__, kinds, ())
        if loaded is None:
            diskcache.store(f.__code__, kinds, (), fresh[f])
        elif loaded != fresh[f]:
            wrong += 1
    if role == "pruner" and round_ % 3 == 0:
        diskcache.prune(1)
print(json.dumps({"wrong": wrong, "stats": diskcache.STATS}))
'''


def test_concurrent_processes_do_not_corrupt_the_cache(tmp_path):
    (tmp_path / "dc_program.py").write_text(PROGRAM)
    script = tmp_path / "hammer.py"
    script.write_text(HAMMER)
    cache_dir = tmp_path / "cache"
    env = child_env(tmp_path, CASSETTE_CACHE_DIR=str(cache_dir))
    env.pop("CASSETTE_NO_DISK_CACHE", None)
    roles = ["writer"] * 5 + ["pruner"]
    children = [subprocess.Popen([sys.executable, str(script), role], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for role in roles]
    reports = []
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["wrong"] == 0 for r in reports)
    assert all(r["stats"]["corrupt"] == 0 and r["stats"]["errors"] == 0 for r in reports)
    assert sum(r["stats"]["hits"] for r in reports) > 0
    assert sum(r["stats"]["evicted"] for r in reports) > 0
    # What is left is whole: every entry loads in a new process.
    leftovers = [p for p in entry_files(cache_dir)]
    check = tmp_path / "check.py"
    check.write_text(textwrap.dedent('''
        import json
        from cassette import diskcache
        ok = bad = 0
        for bucket in diskcache._buckets():
            for _mtime, _size, path in diskcache._scan(bucket):
                data = open(path, "rb").read()
                body = data[diskcache._HEADER:]
                good = (data[:len(diskcache.MAGIC)] == diskcache.MAGIC and
                        diskcache._blake2b(body, digest_size=16).digest()
                        == data[diskcache._HEADER - 16:diskcache._HEADER])
                ok += good
                bad += not good
        print(json.dumps({"ok": ok, "bad": bad}))
    '''))
    result = run_child(tmp_path, check, env)
    assert result == {"ok": len(leftovers), "bad": 0}
    assert not [name for _base, _dirs, names in os.walk(cache_dir) for name in names
                if name.startswith(".tmp-")]


def test_entries_read_or_written_lately_are_served_without_a_file(cache):
    code, fresh, path = _stored_entry()
    assert diskcache.load(code, ALL, ()) == fresh      # read from the file
    os.unlink(path)
    hits = diskcache.STATS["hits"]
    assert diskcache.load(code, ALL, ()) == fresh      # served from memory
    assert diskcache.STATS["hits"] == hits + 1
    diskcache.forget_recent()
    assert diskcache.load(code, ALL, ()) is None       # as a new process: no file, a miss


def test_equal_code_made_again_is_served_from_memory_with_its_own_constants(cache, monkeypatch):
    """Code made again from the same source (``exec`` of generated code, as
    dataclasses and namedtuple do) finds its entry by its contents, without
    the digest, and gets its own constants back, not those of the code the
    entry was made for; code of another file does not."""
    source = "def made(x):\n    return [lambda: x + i for i in range(3)]\n"

    def compiled(filename="<generated>"):
        namespace = {}
        exec(compile(source, filename, "exec"), namespace)
        return namespace["made"].__code__

    first, second = compiled(), compiled()
    assert first == second and first is not second
    diskcache.store(first, ALL, (), rewrite._rewritten_code(first, ALL, (), None))
    with monkeypatch.context() as patched:
        patched.setattr(diskcache, "entry_key", lambda *args: pytest.fail("digest computed"))
        loaded = diskcache.load(second, ALL, ())
    assert loaded == rewrite._rewritten_code(second, ALL, (), None)
    nested = [c for c in second.co_consts if type(c) is type(second)]
    assert nested and all(any(c is n for c in loaded.co_consts) for n in nested)
    assert not any(c is n for c in loaded.co_consts for n in first.co_consts
                   if type(n) is type(first))
    assert diskcache.load(compiled("<elsewhere>"), ALL, ()) is None
    assert diskcache.STATS["misses"] == 1


TOGETHER = '''
import json
import os
import statistics
import sys
import time

import cassette
from cassette import diskcache


class Count(cassette.Context):
    def prehook(self, f, /, *args, **kwargs):
        self.metadata[0] += 1


def work():
    data = [1.0, 2.5, 3.25, 4.0, 8.5, 2.0, 7.25]
    return (statistics.mean(data), statistics.median(data), statistics.stdev(data),
            statistics.quantiles(data, n=4), statistics.correlation(data, data[::-1]),
            statistics.linear_regression(data, sorted(data)), statistics.mode([1, 1, 2]),
            statistics.NormalDist.from_samples(data).cdf(3.0), statistics.pvariance(data))


if sys.argv[1] == "plain":
    print(json.dumps({"result": repr(work())}))
    sys.exit()
while not os.path.exists(sys.argv[2]):      # every child starts rewriting at once
    time.sleep(0.001)
result = cassette.overdub(Count(metadata=[0]), work)
print(json.dumps({"result": repr(result), "stats": diskcache.STATS}))
'''


def test_processes_started_together_rewrite_each_code_object_about_once(tmp_path):
    """Eight processes, released at one moment, overdub the same functions
    with an empty cache: between them they store about one entry per code
    object (each rewrite claimed by one of them, the others waiting for its
    entry) instead of eight, and each computes what the plain run does."""
    script = tmp_path / "together.py"
    script.write_text(TOGETHER)
    go = tmp_path / "go"
    cache_dir = tmp_path / "cache"
    env = child_env(tmp_path, CASSETTE_CACHE_DIR=str(cache_dir))
    env.pop("CASSETTE_NO_DISK_CACHE", None)
    plain = json.loads(subprocess.run([sys.executable, str(script), "plain"], env=env,
                                      capture_output=True, text=True, timeout=300).stdout)
    children = [subprocess.Popen([sys.executable, str(script), "dubbed", str(go)], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(8)]
    time.sleep(1.0)                 # all imported and waiting
    go.write_text("")
    reports = []
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["result"] == plain["result"] for r in reports)
    entries = len(entry_files(cache_dir))
    stores = sum(r["stats"]["stores"] for r in reports)
    assert entries > 20
    assert stores <= 1.25 * entries, (stores, entries)      # without claims: 1.7-8x
    assert sum(r["stats"]["waited"] for r in reports) > 0
    assert all(r["stats"]["errors"] == r["stats"]["corrupt"] == 0 for r in reports)
    assert not [name for _base, _dirs, names in os.walk(cache_dir) for name in names
                if name.startswith(".tmp-claim-")]


KILLED = """
import sys
from cassette import diskcache, rewrite, Intercept
import statistics, json.decoder, json.encoder, textwrap, difflib

kinds = rewrite.kinds_for(Intercept.ALL)
codes = []
for module in (statistics, json.decoder, json.encoder, textwrap, difflib):
    codes += [f.__code__ for f in vars(module).values() if type(f).__name__ == "function"]
print("ready", flush=True)
while True:                         # until killed
    for code in codes:
        if diskcache.load(code, kinds, ()) is None:
            diskcache.store(code, kinds, (), rewrite._rewritten_code(code, kinds, (), None))
        diskcache.forget_recent()
        diskcache.prune(0.05)       # keep deleting, so that it keeps writing
"""


def test_a_writer_killed_mid_write_leaves_whole_entries_or_none(tmp_path):
    """SIGKILL a process in the middle of storing and pruning: what it left
    is whole entries (each loads in a new process) and temporaries no
    reader takes for entries; its claims, of a dead process, make nobody
    wait."""
    signal = pytest.importorskip("signal")
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    cache_dir = tmp_path / "cache"
    env = child_env(tmp_path, CASSETTE_CACHE_DIR=str(cache_dir))
    env.pop("CASSETTE_NO_DISK_CACHE", None)
    for delay in (0.3, 0.7, 1.1):
        writer = subprocess.Popen([sys.executable, str(script)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert writer.stdout.readline() == "ready\n"
        time.sleep(delay)
        writer.send_signal(signal.SIGKILL)
        writer.communicate(timeout=60)
        check = tmp_path / "check.py"
        check.write_text(textwrap.dedent('''
            import json, time
            import statistics, json.decoder, json.encoder, textwrap, difflib
            from cassette import diskcache, rewrite, Intercept
            kinds = rewrite.kinds_for(Intercept.ALL)
            loaded = 0
            start = time.perf_counter()
            codes = {}                      # a function two modules share is one entry
            for module in (statistics, json.decoder, json.encoder, textwrap, difflib):
                for f in vars(module).values():
                    if type(f).__name__ == "function":
                        codes[f.__code__] = None
            for source in codes:
                code = diskcache.load(source, kinds, ())
                if code is not None:
                    assert code == rewrite._rewritten_code(source, kinds, (), None)
                    loaded += 1
                diskcache.release(source, kinds, ())
            print(json.dumps({"loaded": loaded, "stats": diskcache.STATS}))
        '''))
        report = run_child(tmp_path, check, env)
        assert report["stats"]["corrupt"] == 0 and report["stats"]["errors"] == 0
        assert report["stats"]["waited"] == 0           # a dead process's claims: no wait
        assert report["loaded"] == len(entry_files(cache_dir))


def test_a_claim_of_a_dead_process_is_taken_over_at_once(cache):
    """A claim left by a process that is gone makes no one wait: the next
    load takes it over and misses at once."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    def sample(x):
        return [x * k for k in range(3)]

    code = sample.__code__
    digest = diskcache.entry_key(code, ALL, ())
    claim = diskcache._claim_path(digest)
    os.makedirs(os.path.dirname(claim), exist_ok=True)
    with open(claim, "wb") as file:
        file.write(f"{int(gone.stdout)} 1".encode())
    assert diskcache.load(code, ALL, ()) is None
    assert diskcache.STATS["waited"] == 0
    with open(claim, "rb") as file:
        assert file.read() == diskcache._claimer()     # now this thread's
    diskcache.release(code, ALL, ())
    assert not os.path.exists(claim)
