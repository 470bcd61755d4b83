"""Session setup of the test suite.

The disk cache of rewritten code (``cassette/diskcache.py``) goes to a
temporary directory for the whole session — and for every process the tests
start, which inherit the environment — never to the user's home directory;
it is deleted at the end.  ``tests/test_diskcache.py`` tests the default
location logic on its own.
"""

import os
import shutil
import sys
import tempfile

_CACHE_DIR = tempfile.mkdtemp(prefix="cassette-test-cache-")
os.environ["CASSETTE_CACHE_DIR"] = _CACHE_DIR
if "cassette.diskcache" in sys.modules:     # imported by a plugin already
    sys.modules["cassette.diskcache"].configure()


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE_DIR, ignore_errors=True)
