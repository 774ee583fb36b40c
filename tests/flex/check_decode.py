"""Greedy autoregressive decoding of a posc checkpoint in plain PyTorch, against posc's answers.

usage: check_decode.py MODULE.py MODEL.safetensors DATA.safetensors...

MODULE is the experiment's `posc emit flex` module, MODEL a checkpoint posc
trained. Each DATA holds one test length's problems: `prompt_tokens` (B, P),
`prompt_channels` (5, B, P), `answer_channels` (5, B, A) - the channels of the
i-th emitted token, as posc feeds them back - `posc_answers` (B, A), posc's
greedy answer tokens padded with -1, and `eos`. For each problem this script
decodes on its own: a full forward pass over the prompt and the tokens emitted
so far, the argmax of the last position appended, until <eos> or A tokens.
Exits 1 when any answer differs from posc's.
"""
import os
import sys

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from posc import PoscGPT, attention_path, load_module, read_safetensors, set_backend  # noqa: E402


def cut(row, eos):
    out = []
    for t in row:
        if t < 0:
            break
        out.append(int(t))
        if t == eos:
            break
    return out


def main():
    module_path, model_path, data_paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    set_backend("flex")  # flex_attention itself wherever this PyTorch has it
    model = PoscGPT.from_safetensors(model_path, load_module(module_path)).float()
    same = total = correct_eos = 0
    for path in data_paths:
        data, _ = read_safetensors(path)
        tokens, channels = data["prompt_tokens"], data["prompt_channels"]
        answer_channels, expected, eos = data["answer_channels"], data["posc_answers"], int(data["eos"].item())
        emitted = []
        with torch.no_grad():
            for i in range(answer_channels.size(2)):
                logits = model(tokens, channels)
                nxt = logits[:, -1].argmax(-1)
                emitted.append(nxt)
                tokens = torch.cat([tokens, nxt[:, None]], 1)
                channels = torch.cat([channels, answer_channels[:, :, i:i + 1]], 2)
        emitted = torch.stack(emitted, 1)
        for b in range(emitted.size(0)):
            mine, posc = cut(emitted[b].tolist(), eos), cut(expected[b].tolist(), eos)
            total += 1
            same += mine == posc
            correct_eos += bool(posc) and posc[-1] == eos
            if mine != posc:
                print(f"{os.path.basename(path)} problem {b}: python {mine}, posc {posc}")
    print(f"attention through {attention_path()} (torch {torch.__version__})")
    print(f"same greedy answers: {same} of {total} ({correct_eos} of posc's end with <eos>)")
    return 0 if same == total and total > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
