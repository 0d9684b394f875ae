"""Helper of test/Dialect/Train/Transforms/loss-scaling-fixtures.test: validates the rewritten fixtures."""
import sys

import onnx

fixtures, tmp = sys.argv[1], sys.argv[2]


def validate(model):
    try:
        onnx.checker.check_model(model, full_check=True)
        onnx.shape_inference.infer_shapes(model, strict_mode=True)
        return None
    except Exception as e:  # the message, for comparison
        return str(e).splitlines()[0]


for m in ("mlp", "cnn", "transformer"):
    for kind, orig in (("train", "training_model"), ("opt", "optimizer_model")):
        g = onnx.load(f"{tmp}.{m}.{kind}.onnx")
        err = validate(g)
        if err is None:
            status = "ok"
        elif err == validate(onnx.load(f"{fixtures}/{m}/{orig}.onnx")):
            status = f"ok (as the original: {err})"
        else:
            status = f"INVALID: {err}"
        ins = sorted(i.name for i in g.graph.input if i.name.startswith("amp."))
        outs = sorted(o.name for o in g.graph.output
                      if o.name.startswith("amp."))
        print(m, kind, status, ins, outs)
