"""posc in Python: a posc checkpoint as a PyTorch nn.Module, posc's tasks,
decoding, training and Hugging Face conversion.

    import posc
    attention = posc.load_module("attention.py")          # posc emit flex FILE > attention.py
    model = posc.PoscGPT.from_safetensors("runs/NAME/seed0/final.safetensors", attention)
    plan = model.plan                                     # the task and training settings, from the checkpoint
    tok = posc.AdditionTokenizer(plan.task)
    seq = tok.encode_prompt(posc.Problem.of(12345, 678))
    logits = model(*seq.tensors())

Modules: model (PoscGPT, hooks), checkpoint (safetensors), attention (the
emitted module), plan (the plan text), tasks (tokenisation and channels of
every task), stream (posc's training batches), decode (greedy decoding and
posc's evaluation), train (fine-tuning as posc trains), hf (transformers
models of the GPT-2 and Llama layouts).
"""
from . import checkpoint, decode, plan, rng, stream, tasks, train
from .attention import attention_path, emit_module, load_module, set_backend
from .checkpoint import read_checkpoint, read_safetensors, write_safetensors
from .model import HookPoint, PoscGPT, sinusoidal
from .plan import Plan
from .stream import DataStream
from .tasks.addition import AdditionTokenizer, Problem

__version__ = "0.1.0"

__all__ = ["checkpoint", "decode", "plan", "rng", "stream", "tasks", "train", "attention_path", "set_backend",
           "emit_module", "load_module", "read_checkpoint", "read_safetensors", "write_safetensors", "HookPoint",
           "PoscGPT", "sinusoidal", "Plan", "DataStream", "AdditionTokenizer", "Problem"]
