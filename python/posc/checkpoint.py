"""posc's checkpoint files: safetensors under GPT names (docs/results.md).

The format is an 8-byte little-endian header length, a JSON header (each
tensor's dtype, shape and byte offsets, and string metadata under
``__metadata__``), then the raw little-endian tensors. This module reads and
writes it with the standard library and torch alone, so that it also runs
under PyTorch builds without the ``safetensors`` package (Debian's 1.13);
files it writes load with ``safetensors.torch.load_file`` and Hugging Face's
loaders, which need ``format = pt`` in the metadata.

posc tags its checkpoints with ``posc_format = posc-gpt``; files written
before that tag existed carry ``format = posc-gpt`` instead. Both are read.
"""
import json
import struct

import torch

POSC_FORMAT = "posc-gpt"

_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool,
}
_NAMES = {dtype: name for name, dtype in _DTYPES.items()}


def read_safetensors(path):
    """(tensors by name, metadata) of a safetensors file; tensors on the CPU."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", None) or {}
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = _DTYPES[entry["dtype"]]
        data = bytearray(raw[8 + n + begin:8 + n + end])
        tensors[name] = (torch.frombuffer(data, dtype=dtype).reshape(entry["shape"]) if data
                         else torch.zeros(entry["shape"], dtype=dtype))
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """Writes tensors (name -> tensor, any device) with string metadata.
    Names are sorted and the header padded to 8 bytes, as the safetensors
    package writes them."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().to("cpu").contiguous()
        if t.dtype not in _NAMES:
            raise ValueError(f"{name}: dtype {t.dtype} has no safetensors name")
        data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": _NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def posc_tag(metadata):
    """The checkpoint's posc tag: posc_format, or format in older files."""
    return metadata.get("posc_format", metadata.get("format"))


def checkpoint_metadata(metadata):
    """Metadata for a file written from Python: the source checkpoint's, with
    the tags Hugging Face's loaders (format = pt) and posc (posc_format)
    read."""
    out = dict(metadata)
    out["format"] = "pt"
    out["posc_format"] = POSC_FORMAT
    return out


def read_checkpoint(path):
    """(tensors, metadata) of a posc checkpoint; ValueError for another file."""
    tensors, metadata = read_safetensors(path)
    if posc_tag(metadata) != POSC_FORMAT:
        raise ValueError(f"{path}: not a posc checkpoint (posc_format {posc_tag(metadata)!r})")
    return tensors, metadata
