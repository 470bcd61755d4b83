"""The on-disk cache of rewritten code (placeholder: caches nothing yet)."""


def load(code, kinds, passes):
    """The rewritten code stored for ``(code, kinds, passes)``, or None."""
    return None


def store(code, kinds, passes, rewritten):
    """Remember ``rewritten`` for ``(code, kinds, passes)``."""
