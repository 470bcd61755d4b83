"""The library's own exceptions (reference §7).

* :class:`CassetteError` is the base of every error cassette raises on its own
  account.  Misuse that Python itself would reject with ``TypeError``
  (overdubbing a non-context, calling a non-callable, registering a handler
  with a malformed signature) raises plain ``TypeError`` instead.
* :class:`PassError`: a user pass raised, returned something that is not
  bytecode, or returned invalid bytecode.  The message names the pass and the
  function; the original exception is chained as ``__cause__``.
* :class:`TaggingError`: the tagging API was used with a context that does not
  have tagging enabled, or with values tagged by an incompatible context.
* :class:`MetadataLossError` / :class:`MetadataLossWarning`: under a context
  whose ``metadata_loss`` is ``"raise"`` / ``"warn"``, a primitive without a
  handler received tagged arguments and its result came back without
  metadata (reference §6).
"""

__all__ = ["CassetteError", "MetadataLossError", "MetadataLossWarning", "PassError",
           "TaggingError"]


class CassetteError(Exception):
    """Base class of cassette's own errors."""


class PassError(CassetteError):
    """A context's pass failed on some function (cause chained)."""


class TaggingError(CassetteError):
    """The tagging API was misused (e.g. tagging without ``enabletagging``)."""


class MetadataLossError(CassetteError):
    """A primitive without a handler dropped the metadata of its tagged
    arguments, under a context whose ``metadata_loss`` is ``"raise"``."""


class MetadataLossWarning(UserWarning):
    """As :class:`MetadataLossError`, under ``metadata_loss = "warn"``."""
