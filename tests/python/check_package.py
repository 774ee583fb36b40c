"""The posc Python package (python/posc) against posc itself.

usage: check_package.py POSC SCRATCH_DIR

Trains tiny models with posc (f64, seconds each) and checks, for each:
  - the checkpoint loads into posc.PoscGPT (an nn.Module: parameters,
    state_dict under the file's names, deepcopy, .float(), .to(device)),
    and with the safetensors package (load_file, safe_open's metadata);
  - posc's training batches (--dump-training) equal posc.DataStream's: the
    Python tokeniser, channels, sampler and padding, bit for bit; document
    channels also from the tokens alone;
  - posc's logits: its loss on those batches, from the loaded weights,
    equals the Python model's (posc_runs.py says how it is read);
  - posc's greedy evaluation (accuracy.csv, protocol.csv) equals
    posc.decode's, problem set and grading included;
  - forward hooks: residual stream and attention probabilities (shapes,
    rows summing to 1, nothing above the diagonal, the residual stream
    giving the logits);
  - fine-tuning: posc.train on posc's stream from posc's weights ends at
    the weights posc's own continuation ends at; a model fine-tuned in
    Python and saved warm-starts posc, whose loss and greedy answers are
    then the Python model's;
  - Hugging Face: GPT2LMHeadModel (learned absolute positions) and
    Llama/Qwen3 (RoPE) converted from posc checkpoints give posc's logits,
    GPT-2 also after save_pretrained / from_pretrained.
Prints every measured difference; exits 1 when a check fails, 77 (skipped)
when this Python lacks torch, safetensors or transformers.
"""
import copy
import dataclasses
import os
import sys
import warnings

sys.dont_write_bytecode = True
try:
    import safetensors.torch
    import torch
    import transformers
except ImportError as e:
    print(f"skipped: {e.name} is missing: run under .venv-torch (bash tools/python_env.sh, which installs "
          "tools/python-requirements.txt)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)
import posc  # noqa: E402
from posc import decode, hf, train  # noqa: E402
from posc.checkpoint import read_safetensors  # noqa: E402
from posc.tasks.batch import Batch  # noqa: E402
from posc.tasks.document_sequences import channels_of  # noqa: E402
from posc_runs import Posc, accuracy, protocol  # noqa: E402

torch.set_num_threads(1)
transformers.utils.logging.disable_progress_bar()
warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")  # eager on purpose
LOSS_TOLERANCE = 1e-11  # f64 losses: posc's fused kernels against PyTorch's operations
WEIGHT_TOLERANCE = 1e-9  # f64 weights after a fine-tune (tests/differential's tolerance)
FINE_TUNE_LR = 1e-3
failures = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        failures.append(name)


def dumped_batches(run):
    folder = os.path.join(run, "dump", "seed0")
    steps = sorted(int(f[5:-12]) for f in os.listdir(folder) if f.startswith("step_"))
    return [Batch(**read_safetensors(os.path.join(folder, f"step_{k}.safetensors"))[0]) for k in steps]


def same_tensors(a, b):
    return set(a) == set(b) and all(a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]) for k in a)


def check_module(tag, model, path):
    tensors, meta = read_safetensors(path)
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    check(f"{tag}: state_dict names and shapes are the checkpoint's",
          shapes == {k: tuple(v.shape) for k, v in tensors.items()})
    learned = {n for n, _ in model.named_parameters()}
    check(f"{tag}: parameters() holds every trained tensor", len(learned) > 0 and all(
        n in tensors for n in learned), f"{sum(p.numel() for p in model.parameters())} weights")
    loaded = safetensors.torch.load_file(path)
    with safetensors.safe_open(path, framework="pt") as f:
        metadata = f.metadata()
    check(f"{tag}: safetensors.torch.load_file reads posc's file", same_tensors(loaded, tensors))
    check(f"{tag}: metadata format = pt, posc_format = posc-gpt",
          metadata.get("format") == "pt" and metadata.get("posc_format") == "posc-gpt")


def check_stream(tag, plan, batches):
    stream = posc.DataStream(plan, 0)
    same = all(all(torch.equal(getattr(mine, k), getattr(b, k)) for k in ("tokens", "targets", "loss_mask", "channels"))
               for b in batches for mine in [stream.next_batch()[0]])
    check(f"{tag}: posc's {len(batches)} training batches are posc.DataStream's (tokens, targets, mask, channels)",
          same)


def loss_difference(model, batches, posc_losses):
    with torch.no_grad():
        mine = [train.batch_loss(model, b).item() for b in batches]
    return max(abs(a - b) for a, b in zip(mine, posc_losses)), mine


def check_logits(tag, model, batches, posc_losses):
    worst, mine = loss_difference(model, batches, posc_losses)
    check(f"{tag}: posc's loss from these weights is the Python model's", worst <= LOSS_TOLERANCE and len(mine) == len(
        posc_losses), f"max |difference| {worst:.2e} over {len(mine)} batches (loss {mine[0]:.6f})")


def check_hooks(tag, model, batch):
    """Residual stream and attention probabilities through forward hooks."""
    seen, handles = {}, []

    def keep(key):
        return lambda module, inputs, output: seen.__setitem__(key, output)
    for i, block in enumerate(model.transformer.h):
        handles.append(block.hook_resid_post.register_forward_hook(keep(("resid", i))))
        handles.append(block.attn.hook_attn_probs.register_forward_hook(keep(("probs", i))))
    with torch.no_grad():
        hooked = model(batch.tokens, batch.channels)
        for h in handles:
            h.remove()
        plain = model(batch.tokens, batch.channels)
        from_resid = torch.nn.functional.linear(model.transformer.ln_f(seen[("resid", len(handles) // 2 - 1)]),
                                                model.transformer.wte.weight)
    B, L = batch.tokens.shape
    cfg = model.config
    probs = [seen[("probs", i)] for i in range(cfg["n_layer"])]
    shapes = all(seen[("resid", i)].shape == (B, L, cfg["n_embd"]) and probs[i].shape == (B, cfg["n_head"], L, L)
                 for i in range(cfg["n_layer"]))
    row_error = max((p.sum(-1) - 1).abs().max().item() for p in probs)
    above = max(p.triu(1).abs().max().item() for p in probs)
    check(f"{tag}: hooks see resid_post (B, L, W) and attn_probs (B, H, L, L) of every block", shapes)
    check(f"{tag}: attention probability rows sum to 1, nothing above the diagonal",
          row_error <= 1e-12 and above == 0.0, f"max |row sum - 1| {row_error:.1e}")
    if cfg["tied_embeddings"]:
        check(f"{tag}: the last resid_post through ln_f and the head gives the logits",
              (from_resid - plain).abs().max().item() <= 1e-12)
    check(f"{tag}: hooked (dense) and unhooked forward agree", (hooked - plain).abs().max().item() <= 1e-12,
          f"{(hooked - plain).abs().max().item():.1e}")


def check_devices(tag, model, batch):
    """The same logits through flex_attention, in float32 and on a GPU where there is one."""
    with torch.no_grad():
        reference = model(batch.tokens, batch.channels)
        posc.set_backend("flex")
        through = posc.attention_path()
        err = (model(batch.tokens, batch.channels) - reference).abs().max().item()
        posc.set_backend("auto")
    check(f"{tag}: attention through {through} gives the dense path's logits", err <= 1e-12, f"{err:.1e}")
    with torch.no_grad():
        f32 = copy.deepcopy(model).float()
        err = (f32(batch.tokens, batch.channels).double() - reference).abs().max().item()
        # float32 keeps about 7 digits. Rotary angles of positions in the hundreds, decay
        # exponents and sums over the width cost one to two of them: measured 1e-6 to 1e-5
        # of the largest logit, depending on the CPU's kernels. The bound scales with that
        # logit; a cast through half or bfloat16 anywhere (3 digits) misses it by far.
        scale = max(1.0, reference.abs().max().item())
        check(f"{tag}: a deepcopy in float32 gives the f64 logits to 1e-4 of their size",
              err <= 1e-4 * scale, f"{err:.1e} of max |logit| {scale:.1f}")
        if torch.cuda.is_available():
            gpu = copy.deepcopy(model).to("cuda")
            err = (gpu(batch.tokens.cuda(), batch.channels.cuda()).cpu() - reference).abs().max().item()
            check(f"{tag}: .to('cuda') gives the CPU's logits", err <= 1e-9, f"{err:.1e}")


def check_gpt2(tag, model, batches, posc_losses, scratch):
    gpt2 = hf.to_gpt2(model)
    batch = batches[0]
    with torch.no_grad():
        ours = model(batch.tokens, batch.channels)
        theirs = gpt2(input_ids=batch.tokens, position_ids=batch.channels[0]).logits
        gpt2.save_pretrained(scratch)
        reloaded = transformers.GPT2LMHeadModel.from_pretrained(scratch, dtype=torch.float64).eval()
        again = reloaded(input_ids=batch.tokens, position_ids=batch.channels[0]).logits
        loss = train.masked_loss(theirs, batch.targets, batch.loss_mask).item()
    err = (ours - theirs).abs().max().item()
    check(f"{tag}: transformers' GPT2LMHeadModel gives the posc model's logits (f64)", err <= 1e-10,
          f"max |logit difference| {err:.1e}")
    check(f"{tag}: ... and posc's loss", abs(loss - posc_losses[0]) <= LOSS_TOLERANCE,
          f"{abs(loss - posc_losses[0]):.1e}")
    check(f"{tag}: ... also after save_pretrained / from_pretrained", (again - theirs).abs().max().item() == 0.0)


def addition_case(p, tag, pos, settings, flags=(), gpt2=False, fine_tune_steps=20):
    """Every check on one tiny addition model."""
    run = p.run(tag, pos, *settings, flags=flags)
    final = os.path.join(run, "seed0", "final.safetensors")
    module = posc.load_module(p.emit_flex(pos, os.path.join(p.scratch, tag + "_attention.py"), *settings, flags=flags))
    model = posc.PoscGPT.from_safetensors(final, module).eval()
    plan = model.plan
    check_module(tag, model, final)
    evaluated, posc_losses = p.evaluate(tag + "-eval", pos, final, *settings, flags=flags)
    batches = dumped_batches(evaluated)
    check_stream(tag, plan, batches)
    check_logits(tag, model, batches, posc_losses)
    check(f"{tag}: posc's weights after two steps of lr 1e-30 are the ones it started from", same_tensors(
        read_safetensors(os.path.join(evaluated, "seed0", "final.safetensors"))[0], read_safetensors(final)[0]))
    mine, theirs = decode.evaluate_addition(model, plan), accuracy(run)
    check(f"{tag}: greedy answers as posc's evaluation (correct, total by digits)", mine == theirs, f"{mine}")
    check_hooks(tag, model, batches[0])
    check_devices(tag, model, batches[0])
    if gpt2:
        check_gpt2(tag, model, batches, posc_losses, os.path.join(p.scratch, tag + "_hf"))

    tuned = copy.deepcopy(model)
    settings_ft = dataclasses.replace(plan.train, lr=FINE_TUNE_LR)
    python_losses = train.fine_tune(tuned, posc.DataStream(plan, 0), settings_ft, steps=fine_tune_steps)
    continued = p.run(tag + "-continued", pos, f'train.init_from="{final}"', *settings, f"train.lr={FINE_TUNE_LR}",
                      steps=fine_tune_steps, flags=flags)
    posc_weights = read_safetensors(os.path.join(continued, "seed0", "final.safetensors"))[0]
    worst = max((posc_weights[k].double() - v.double()).abs().max().item() for k, v in tuned.state_dict().items())
    check(f"{tag}: {fine_tune_steps} steps of posc.train on posc's stream end at posc's own weights",
          worst <= WEIGHT_TOLERANCE, f"max |weight difference| {worst:.1e}, loss {python_losses[0]:.4f} -> "
          f"{python_losses[-1]:.4f}")

    saved = os.path.join(p.scratch, tag + "_tuned.safetensors")
    tuned.save_safetensors(saved)
    check(f"{tag}: the fine-tuned file loads with safetensors.torch.load_file",
          same_tensors(safetensors.torch.load_file(saved), {k: v for k, v in tuned.state_dict().items()}))
    warm, warm_losses = p.evaluate(tag + "-warm", pos, saved, *settings, flags=flags)
    check_logits(f"{tag} fine-tuned in Python, warm-started in posc", tuned, dumped_batches(warm), warm_losses)
    mine, theirs = decode.evaluate_addition(tuned, plan), accuracy(warm)
    check(f"{tag} fine-tuned: posc's greedy evaluation of the warm start equals Python's", mine == theirs, f"{mine}")


def documents_case(p, tag, pos):
    run = p.run(tag, pos)
    final = os.path.join(run, "seed0", "final.safetensors")
    module = posc.load_module(p.emit_flex(pos, os.path.join(p.scratch, tag + ".py")))
    model = posc.PoscGPT.from_safetensors(final, module).eval()
    plan = model.plan
    check_module(tag, model, final)
    evaluated, posc_losses = p.evaluate(tag + "-eval", pos, final, steps=3)
    batches = dumped_batches(evaluated)
    check_stream(tag, plan, batches)
    rows = [(b.tokens[r], b.channels[:, r]) for b in batches for r in range(b.tokens.shape[0])]
    same = all(channels_of(t[:int(t.nonzero().max()) + 1].tolist()) == c[:, :int(t.nonzero().max()) + 1].tolist()
               for t, c in rows)
    check(f"{tag}: channels built from the tokens alone are posc's ({len(rows)} documents)", same)
    check_logits(tag, model, batches, posc_losses)
    cells = decode.evaluate_documents(model, plan)
    rows = protocol(run)
    mine = [(c.task, c.length, c.depth, c.distractors, n, k["correct"], k["abstained"], k["unsupported"], k["wrong"])
            for c, n, k in cells]
    theirs = [(r["task"], int(r["length"]), float(r["depth"]), int(r["distractors"]), int(r["documents"]),
               int(r["correct"]), int(r["abstained"]), int(r["unsupported"]), int(r["wrong"])) for r in rows]
    hops = all(abs(k["hop1"] / n - float(r["hop1_accuracy"])) < 1e-12 and abs(k["hop2"] / n - float(r["hop2_accuracy"]))
               < 1e-12 for (c, n, k), r in zip(cells, rows) if c.task == "composition")
    grades = {g: sum(k[g] for _, _, k in cells) for g in ("correct", "abstained", "unsupported", "wrong")}
    check(f"{tag}: the protocol's cells, documents and grades are posc's ({len(mine)} cells)", mine == theirs and hops,
          f"{grades}")
    check_hooks(tag, model, batches[0])


def llama_case(p, tag, settings, expected_class):
    pos = os.path.join(ROOT, "examples", "adder", "trained_qwen3.pos")
    settings = ["eval.protocol=lengths", "task.test_digits=[3]", "task.problems_per_length=4"] + settings
    run = p.run(tag, pos, *settings, steps=40)
    final = os.path.join(run, "seed0", "final.safetensors")
    model = posc.PoscGPT.from_safetensors(final, posc.load_module(p.emit_flex(pos, os.path.join(p.scratch, tag + ".py"),
                                                                               *settings))).eval()
    batch = posc.DataStream(model.plan, 0).next_batch()[0]
    converted = hf.to_llama(model)
    with torch.no_grad():
        ours = model(batch.tokens, batch.channels)
        theirs = converted(input_ids=batch.tokens, position_ids=batch.channels[0]).logits
    err = (ours - theirs).abs().max().item()
    check(f"{tag}: transformers' {type(converted).__name__} gives the posc model's logits (f32)",
          type(converted).__name__ == expected_class and err <= 1e-5, f"max |logit difference| {err:.1e}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    p = Posc(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    os.makedirs(p.scratch, exist_ok=True)
    os.chdir(ROOT)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, safetensors {safetensors.__version__}; "
          f"attention without gradients: {posc.attention_path()}")
    addition_case(p, "gpt2_layout", "tests/python/gpt2_layout.pos", [], gpt2=True)
    addition_case(p, "rope2d_decay_sink", "examples/addition/rope2d_decay_sink_scratch.pos",
                  ["model.precision=f64", "train.steps=600", "task.test_digits=[2, 3, 4]",
                   "task.problems_per_length=30"], flags=("--preset", "small"), fine_tune_steps=10)
    # The leaderboard entries' recipe: operands drawn by value, AdamW without
    # bias correction, decay on every tensor (Python's stream and optimiser
    # must follow the plan's settings).
    addition_case(p, "adder_mlx_adamw", "examples/adder/trained_qwen3.pos",
                  ["model.precision=f64", "train.steps=100", "train.bias_correction=false", "train.weight_decay_on=all",
                   "eval.protocol=lengths", "task.test_digits=[3, 10]", "task.problems_per_length=20"],
                  fine_tune_steps=10)
    documents_case(p, "documents_tiny", "tests/python/documents_tiny.pos")
    llama_case(p, "qwen3_layout", [], "Qwen3ForCausalLM")
    llama_case(p, "llama_layout", ["model.qk_norm=false", "model.bias=true"], "LlamaForCausalLM")
    print(f"{'all checks passed' if not failures else f'{len(failures)} failed: ' + ', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
