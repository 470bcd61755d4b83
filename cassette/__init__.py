"""cassette: Julia's Cassette.jl for CPython.

A *context* is a class; ``cassette.overdub(ctx, f, *args)`` runs ``f`` with
every call and operator inside it — and inside everything it calls — routed
through the context's hooks (``prehook``, ``posthook``), overrides
(``execute``, ``fallback``) and passes.  See ``docs/`` for the model;
``docs/reference.md`` states the contract, which the code cites as
"reference §N".
"""

from .versions import SUPPORTED as _SUPPORTED  # raises ImportError elsewhere

from ._singletons import ANY, NoMetaData, NoMetaMeta, OverdubInstead
from .context import Context, context, similarcontext
from .dispatch import Vararg, execute, fallback, posthook, prehook
from .errors import (CassetteError, MetadataLossError, MetadataLossWarning, PassError,
                     TaggingError)
from .operations import Intercept
from .entry import canoverdub, overdub
from .escapes import Escapes, count_escapes
from .passes import NoPass, Pass
from .tagging import (Meta, Tagged, enabletagging, hasmetadata, hasmetameta, hastagging,
                      istagged, istaggedtype, metadata, metameta, tag, untag, untagtype)
from . import ir, propagation as _propagation

__all__ = [
    "ANY", "CassetteError", "Context", "Escapes", "Intercept", "Meta", "MetadataLossError",
    "MetadataLossWarning", "NoMetaData",
    "NoMetaMeta", "NoPass", "OverdubInstead", "Pass", "PassError", "Tagged", "TaggingError",
    "Vararg", "canoverdub", "context", "count_escapes", "enabletagging", "execute", "fallback",
    "hasmetadata", "hasmetameta", "hastagging", "ir", "istagged", "istaggedtype", "metadata",
    "metameta", "overdub", "posthook", "prehook", "similarcontext", "tag", "untag", "untagtype",
]
