"""DBOS's serializer on batonflow's codec, so that nothing DBOS stores is pickled."""

from __future__ import annotations

from typing import Any

from dbos import Serializer

from ..codec import decode_json, encode_json
from ..errors import SegmentFailedError

__all__ = ["CodecSerializer"]


class CodecSerializer(Serializer):
    """DBOS's serializer on batonflow's codec: workflow inputs, outputs and errors as the codec's JSON, which can
    build only registered classes. An error travels as its class name and message and comes back a
    ``SegmentFailedError`` (an exception of another process cannot be rebuilt safely)."""

    def serialize(self, data: Any) -> str:
        if isinstance(data, BaseException):
            tree: dict[str, Any] = {"error": type(data).__name__, "message": str(data)}
        elif isinstance(data, dict) and set(data) == {"args", "kwargs"}:
            tree = {"inputs": {"args": list(data["args"]), "kwargs": data["kwargs"]}}
        else:
            tree = {"value": data}
        return encode_json(tree, what="DBOS value")

    def deserialize(self, serialized_data: str) -> Any:
        tree = decode_json(serialized_data, what="DBOS value")
        if "error" in tree:
            return SegmentFailedError(f"{tree['error']}: {tree['message']}", kind=tree["error"])
        if "inputs" in tree:
            return {"args": tuple(tree["inputs"]["args"]), "kwargs": tree["inputs"]["kwargs"]}
        return tree["value"]

    def name(self) -> str:
        return "batonflow_codec"
