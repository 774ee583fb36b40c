"""Independent check of `posc export onnx`.

Exports a hand-set model, runs ONNX's own checker on the file, then evaluates
the graph node by node with numpy (an interpreter written here from the ONNX
operator definitions, sharing no code with posc) and compares its logits with
the logits posc computes itself for the same token sequences.

usage: check_export.py POSC MODEL.pos WORKDIR [PROBLEMS]
Exit 0: match; 1: mismatch or a failure; 77: python3-onnx or numpy missing
(CTest reports the test as skipped).
"""
import os
import subprocess
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as e:  # pragma: no cover
    print(f"SKIPPED: {e} (install python3-onnx and python3-numpy)")
    sys.exit(77)


def attribute(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def run_graph(model, tokens):
    values = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    values[model.graph.input[0].name] = tokens
    for node in model.graph.node:
        x = [values[name] if name else None for name in node.input]
        op = node.op_type
        if op == "Gather":
            y = np.take(x[0], x[1], axis=attribute(node, "axis", 0))
        elif op == "Shape":
            y = np.array(x[0].shape, dtype=np.int64)
        elif op == "Range":
            y = np.arange(x[0], x[1], x[2], dtype=np.int64)
        elif op == "Cast":
            assert attribute(node, "to") == onnx.TensorProto.DOUBLE
            y = x[0].astype(np.float64)
        elif op == "Unsqueeze":
            y = np.expand_dims(x[0], tuple(int(a) for a in x[1]))
        elif op == "Pad":
            pads = x[1]
            half = len(pads) // 2
            y = np.pad(x[0], [(pads[i], pads[i + half]) for i in range(half)], constant_values=x[2])
        elif op == "Reshape":
            shape = [x[0].shape[i] if s == 0 else s for i, s in enumerate(x[1])]
            y = x[0].reshape(shape)
        elif op == "Transpose":
            y = np.transpose(x[0], attribute(node, "perm"))
        elif op == "MatMul":
            y = np.matmul(x[0], x[1])
        elif op in ("Add", "Sub", "Mul", "Div", "Max"):
            f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Max": np.maximum}[op]
            y = f(x[0], x[1])
        elif op == "GreaterOrEqual":
            y = x[0] >= x[1]
        elif op == "Where":
            y = np.where(x[0], x[1], x[2])
        elif op == "ReduceMax":
            y = np.max(x[0], axis=tuple(attribute(node, "axes")), keepdims=bool(attribute(node, "keepdims", 1)))
        elif op == "ReduceSum":
            y = np.sum(x[0], axis=tuple(int(a) for a in x[1]), keepdims=bool(attribute(node, "keepdims", 1)))
        elif op == "Exp":
            y = np.exp(x[0])
        elif op == "Neg":
            y = -x[0]
        elif op == "Relu":
            y = np.maximum(x[0], 0)
        elif op == "Identity":
            y = x[0]
        else:
            raise SystemExit(f"operator {op} is not known to this checker")
        values[node.output[0]] = y
    return values[model.graph.output[0].name]


def main():
    posc, source, workdir = sys.argv[1:4]
    problems = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    os.makedirs(workdir, exist_ok=True)
    model_path = os.path.join(workdir, "model.onnx")
    logits_path = os.path.join(workdir, "logits.txt")
    subprocess.run([posc, "export", "onnx", source, "-o", model_path, "--logits", logits_path,
                    "--problems", str(problems)], check=True)
    onnx.checker.check_model(onnx.load(model_path), full_check=True)
    model = onnx.load(model_path)
    with open(logits_path) as f:
        header = f.readline().split()
        count, vocab = int(header[1]), int(header[3])
        worst = 0.0
        for _ in range(count):
            line = [int(t) for t in f.readline().split()]
            prompt, tokens = line[0], np.array([line[1:]], dtype=np.int64)
            expected = np.array([float(v) for v in f.readline().split()]).reshape(tokens.shape[1], vocab)
            got = run_graph(model, tokens)[0]
            scale = max(1.0, float(np.max(np.abs(expected))))
            worst = max(worst, float(np.max(np.abs(got - expected))) / scale)
            # The decisions a decoder takes (positions prompt - 1 .. end - 2): the same argmax.
            decisions = slice(prompt - 1, tokens.shape[1] - 1)
            if not np.array_equal(np.argmax(got[decisions], axis=1), np.argmax(expected[decisions], axis=1)):
                print(f"argmax differs for tokens {tokens[0].tolist()}")
                return 1
    print(f"{count} problems, {len(model.graph.node)} nodes: largest logit difference {worst:.3g} (relative to the largest logit)")
    if worst > 1e-9:
        print("MISMATCH: the exported graph does not compute posc's logits")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
