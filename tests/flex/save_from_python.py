"""Writes a model's tensors to safetensors from Python, as a researcher would.

usage: save_from_python.py SOURCE.safetensors OUT.safetensors

Reads SOURCE (a posc checkpoint) with the posc package's reader, keeps only
the GPT tensors (no posc.* extras, no metadata), scales the token embedding
by 0.5 so that the result is not a byte copy, and writes OUT with the
package's writer (an 8-byte header length, a JSON header, raw little-endian
tensors) - the format Python's safetensors package writes - without any
metadata.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from posc import read_safetensors, write_safetensors  # noqa: E402


def main():
    tensors, _ = read_safetensors(sys.argv[1])
    tensors = {k: v for k, v in tensors.items() if not k.startswith("posc.")}
    tensors["transformer.wte.weight"] = tensors["transformer.wte.weight"] * 0.5
    write_safetensors(sys.argv[2], tensors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
