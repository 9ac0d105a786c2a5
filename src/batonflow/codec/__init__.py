"""The codec: how batonflow's values become versioned, checksummed bytes (and plain JSON text) and back.

``encode``/``decode`` turn a value — a checkpoint, a journal chunk, a session snapshot — into a 9-byte header and a
compact JSON body and back (``encode_async`` compresses large bodies on a worker thread); ``encode_json``/
``decode_json`` give the same value tree as plain JSON text, for documents kept as text (a flow context's
snapshot, a step record, an event). No pickle, eval or marshal: a payload builds only the classes
``register_type`` named, through their constructors, and ``registered_types()`` lists them. ``DecodeLimits``
bounds what a payload may grow into while it is decoded (``DEFAULT_LIMITS`` unless a store is given others). The
messages and recorded events of a payload are written once (``CODEC_VERSION`` 2), a chain of payloads
(``SharedObjects``) refers to the ones written before, and ``encode_cache`` (an ``EncodeCache``, off until given
a size such as ``CACHE_SIZE``) re-uses the text of those it remembers unchanged. Anything it cannot write or read
is a ``CodecError`` naming the place.

The codec sits below the stores (which keep its bytes, and re-export these names from ``batonflow.store``, where
they lived first) and above the schema (whose types it registers itself).
"""

from ..errors import CodecError as CodecError
from ._codec import CODEC_VERSION as CODEC_VERSION
from ._codec import DEFAULT_LIMITS as DEFAULT_LIMITS
from ._codec import DecodeLimits as DecodeLimits
from ._codec import decode as decode
from ._codec import decode_json as decode_json
from ._codec import encode as encode
from ._codec import encode_async as encode_async
from ._codec import encode_json as encode_json
from ._fits import CACHE_SIZE as CACHE_SIZE
from ._fits import EncodeCache as EncodeCache
from ._fits import cache as encode_cache
from ._registry import register_builtin_types as register_builtin_types
from ._registry import register_type as register_type
from ._registry import registered_types as registered_types
from ._share import SharedObjects as SharedObjects

__all__ = [
    "CACHE_SIZE",
    "CODEC_VERSION",
    "DEFAULT_LIMITS",
    "CodecError",
    "DecodeLimits",
    "EncodeCache",
    "SharedObjects",
    "decode",
    "decode_json",
    "encode",
    "encode_async",
    "encode_cache",
    "encode_json",
    "register_builtin_types",
    "register_type",
    "registered_types",
]
