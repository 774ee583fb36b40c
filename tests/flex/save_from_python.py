"""Writes a model's tensors to safetensors from Python, as a researcher would.

usage: save_from_python.py SOURCE.safetensors OUT.safetensors

Reads SOURCE (a posc checkpoint) with tools/posc_model.py's reader, keeps
only the GPT tensors (no posc.* extras, no metadata), scales the token
embedding by 0.5 so that the result is not a byte copy, and writes OUT with
this script's own serializer (an 8-byte header length, a JSON header, raw
little-endian tensors) - the format Python's safetensors package writes.
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from posc_model import read_safetensors  # noqa: E402

NAMES = {"torch.float32": "F32", "torch.float64": "F64"}


def main():
    tensors, _ = read_safetensors(sys.argv[1])
    tensors = {k: v for k, v in tensors.items() if not k.startswith("posc.")}
    tensors["transformer.wte.weight"] = tensors["transformer.wte.weight"] * 0.5
    header, blobs, offset = {}, [], 0
    for name, t in sorted(tensors.items()):
        data = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": NAMES[str(t.dtype)], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    with open(sys.argv[2], "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
