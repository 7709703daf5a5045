"""ONNX models tuned by gbxfer and by TVM's XGBModel, against ONNX Runtime on the same machine.

    python scripts/bench_onnx.py [--models resnet50,bert] [--minutes 60] [--points 15,30,60]
                                 [--hardware x86-avx2-1t] [--seed 0] [--repeats 15]
                                 [--work DIR] [--bert-layers 12] [--name bench_onnx]

Builds two real architectures as ONNX graphs in code, with seeded random weights (latency does
not depend on their values): ResNet-50 (batch 1, 3 x 224 x 224, batch norm folded into the
convolutions' bias) and a BERT-base encoder (12 layers, hidden 768, 12 heads, FFN 3072, GELU,
LayerNormalization; batch 1, sequence 128; hidden states in). Tunes each on --hardware (this
machine's native ISA at 1 thread) for --minutes with ``gbxfer tune --onnx`` and the gbxfer cost
model (the pretrained model, online updates), and with ``--cost-model xgb`` (TVM's XGBModel):
one run each, saved under --work as it finishes (a rerun skips finished runs). Each run's
database as it was at each of --points minutes (its prefix by the tuning curve's clock) is
compiled to a library; then ONNX Runtime (defaults except the intra-op thread count), TVM
untuned and every tuned point are timed at 1 and at 2 threads (one process per thread count),
interleaved: each of --repeats rounds times every build once (mean over >= 0.5 s), and
gbxfer's latency over XGBModel's is the median of the per-round ratios. Every row records
the CPU model. Run on an idle machine. Results: scripts/results/<name>.{json,csv,png}; the
libraries and runs under --work.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from _results import RESULTS, print_table, stamp, write_results

METHODS = {"gbxfer": "gbxfer", "xgb": "XGBModel"}


# ---------------------------------------------------------------- the models, as ONNX graphs
class Graph:
    """A growing ONNX graph: nodes, seeded random initializers, fresh names."""

    def __init__(self, seed: int):
        self.rng, self.nodes, self.weights, self.count = np.random.default_rng(seed), [], [], 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def weight(self, shape, scale: float) -> str:
        from onnx import numpy_helper

        name = self.name("w")
        self.weights.append(numpy_helper.from_array(
            (self.rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(self, values, dtype=np.int64) -> str:
        from onnx import numpy_helper

        name = self.name("c")
        self.weights.append(numpy_helper.from_array(np.asarray(values, dtype=dtype), name))
        return name

    def op(self, kind: str, inputs, **attrs) -> str:
        from onnx import helper

        out = self.name(kind.lower())
        self.nodes.append(helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def model(self, inputs, output: str, shape):
        from onnx import TensorProto, helper

        graph = helper.make_graph(
            self.nodes, "main", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                 for n, s in inputs],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, shape)], self.weights)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def resnet50(seed: int = 0):
    g = Graph(seed)

    def conv(x, cin, cout, k, stride, relu=True):
        w = g.weight((cout, cin, k, k), np.sqrt(2.0 / (cin * k * k)))
        y = g.op("Conv", [x, w, g.weight((cout,), 0.1)], kernel_shape=[k, k],
                 strides=[stride, stride], pads=[k // 2] * 4)
        return g.op("Relu", [y]) if relu else y

    def bottleneck(x, cin, width, stride):
        y = conv(conv(conv(x, cin, width, 1, 1), width, width, 3, stride), width, 4 * width, 1,
                 1, relu=False)
        skip = x if stride == 1 and cin == 4 * width else conv(x, cin, 4 * width, 1, stride,
                                                               relu=False)
        return g.op("Relu", [g.op("Add", [y, skip])])

    x = conv("data", 3, 64, 7, 2)
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for b in range(blocks):
            x = bottleneck(x, cin, width, stride if b == 0 else 1)
            cin = 4 * width
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])])
    x = g.op("Gemm", [x, g.weight((2048, 1000), np.sqrt(1 / 2048)), g.weight((1000,), 0.1)])
    return g.model([("data", [1, 3, 224, 224])], x, [1, 1000])


def bert(seed: int = 0, layers: int = 12, seq: int = 128, hidden: int = 768, heads: int = 12,
         ffn: int = 3072):
    g = Graph(seed)
    head = hidden // heads

    def dense(x, cin, cout):
        return g.op("Add", [g.op("MatMul", [x, g.weight((cin, cout), np.sqrt(1 / cin))]),
                            g.weight((cout,), 0.02)])

    def layer_norm(x):
        return g.op("LayerNormalization", [x, g.weight((hidden,), 0.1), g.weight((hidden,), 0.1)],
                    axis=-1, epsilon=1e-12)

    def split_heads(x, perm):
        return g.op("Transpose", [g.op("Reshape", [x, g.const([1, seq, heads, head])])],
                    perm=perm)

    x = "hidden_states"
    for _ in range(layers):
        q = split_heads(dense(x, hidden, hidden), [0, 2, 1, 3])
        k = split_heads(dense(x, hidden, hidden), [0, 2, 3, 1])
        v = split_heads(dense(x, hidden, hidden), [0, 2, 1, 3])
        scores = g.op("Mul", [g.op("MatMul", [q, k]),
                              g.const(1 / np.sqrt(head), np.float32)])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]),
                                   g.const([1, seq, hidden])])
        x = layer_norm(g.op("Add", [dense(context, hidden, hidden), x]))
        h = dense(x, hidden, ffn)
        gelu = g.op("Mul", [g.op("Mul", [h, g.const(0.5, np.float32)]), g.op("Add", [
            g.op("Erf", [g.op("Div", [h, g.const(np.sqrt(2.0), np.float32)])]),
            g.const(1.0, np.float32)])])
        x = layer_norm(g.op("Add", [dense(gelu, ffn, hidden), x]))
    return g.model([("hidden_states", [1, seq, hidden])], x, [1, seq, hidden])


# ---------------------------------------------------------------- tuning and builds
def cpu_model() -> str:
    return stamp()["machine"]["cpu"]


def tune_run(model_path: Path, method: str, args, out: Path) -> dict:
    """One tuning run (skipped when its summary exists); its summary."""
    if (out / "summary.json").exists():
        return json.loads((out / "summary.json").read_text())
    if out.exists():  # a run killed midway starts again
        import shutil

        shutil.rmtree(out)
    command = [sys.executable, "-m", "gbxfer", "tune", "--onnx", str(model_path), "--hardware",
               args.hardware, "--minutes", str(args.minutes), "--cost-model", method,
               "--seed", str(args.seed), "--out", str(out)]
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=False)
    if not (out / "summary.json").exists():
        raise SystemExit(f"tuning run {out} failed")
    return json.loads((out / "summary.json").read_text())


def build_points(model_path: Path, runs: dict, args, work: Path) -> list[dict]:
    """Libraries of the untuned model and of each run's database at each point (cached)."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.hardware import load_profile
    from gbxfer.tvm._networks import compile_network, database_prefix, scheduled_functions
    from gbxfer.tvm._onnx import export_module, load_onnx

    index = work / "builds.json"
    builds = json.loads(index.read_text()) if index.exists() else []
    wanted = [("untuned", 0)] + [(m, p) for m in runs for p in args.points]
    if [(b["method"], b["minutes"]) for b in builds] == wanted:
        return builds
    network = load_onnx(model_path)
    target = tvm.target.Target(load_profile(args.hardware).target)
    builds = []
    for method, minutes in wanted:
        if method == "untuned":
            database, trials = ms.database.MemoryDatabase(), 0
        else:
            curve = pd.read_csv(runs[method] / "curve.csv")
            before = curve["trials"][curve["seconds"] <= 60 * minutes]
            trials = int(before.max()) if len(before) else 0
            database = database_prefix(runs[method] / "metaschedule", trials)
        path = work / f"{method}-{minutes:g}min.so"
        if not path.exists():
            export_module(compile_network(network.mod, database, target), path)
        builds.append({"method": method, "minutes": minutes, "trials": trials,
                       "library": str(path), "scheduled": "{}/{}".format(
                           *scheduled_functions(network.mod, database, target))})
        print(f"built {path.name} ({trials} trials)", flush=True)
    index.write_text(json.dumps(builds, indent=1))
    return builds


def time_builds(model_path: Path, builds: list[dict], threads: int, repeats: int) -> dict:
    """In a fresh process with TVM_NUM_THREADS = ``threads``: seconds per inference of ONNX
    Runtime and of every build, ``repeats`` interleaved rounds."""
    env = {**os.environ, "TVM_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    result = subprocess.run(
        [sys.executable, __file__, "--time-worker", json.dumps(
            {"model": str(model_path), "builds": builds, "threads": threads,
             "repeats": repeats})], env=env, check=True, capture_output=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def time_worker(spec: dict) -> None:
    import onnx
    import tvm

    from gbxfer.tvm._networks import time_network
    from gbxfer.tvm._onnx import OnnxNetwork, onnxruntime_session, random_inputs, \
        time_onnxruntime

    graph = onnx.load(spec["model"], load_external_data=False).graph
    weights = {w.name for w in graph.initializer}
    inputs = {i.name: (tuple(d.dim_value for d in i.type.tensor_type.shape.dim),
                       np.dtype(np.float32)) for i in graph.input if i.name not in weights}
    feeds = random_inputs(OnnxNetwork(Path(spec["model"]), inputs, [], None))
    session = onnxruntime_session(spec["model"], spec["threads"])
    libraries = {b["library"]: tvm.runtime.load_module(b["library"]) for b in spec["builds"]}
    seconds = {"onnxruntime": [], **{b["library"]: [] for b in spec["builds"]}}
    arrays = list(feeds.values())
    for _ in range(spec["repeats"]):
        seconds["onnxruntime"] += time_onnxruntime(session, feeds, repeat=1, min_repeat_ms=500)
        for path, library in libraries.items():
            seconds[path] += time_network(library, arrays, repeat=1, min_repeat_ms=500)
    print(json.dumps(seconds))


# ---------------------------------------------------------------- report
def report(model: str, builds, seconds: dict, threads: int, runs: dict, cpu: str) -> list[dict]:
    ort = np.asarray(seconds["onnxruntime"])
    rows = [{"model": model, "threads": threads, "method": "ONNX Runtime", "minutes": 0,
             "trials": 0, "latency_ms": 1e3 * float(np.median(ort)),
             "over_onnxruntime": 1.0, "cpu": cpu}]
    by = {(b["method"], b["minutes"]): np.asarray(seconds[b["library"]]) for b in builds}
    for b in builds:
        s = by[b["method"], b["minutes"]]
        row = {"model": model, "threads": threads,
               "method": METHODS.get(b["method"], b["method"]), "minutes": b["minutes"],
               "trials": b["trials"], "scheduled": b["scheduled"],
               "latency_ms": 1e3 * float(np.median(s)),
               "over_onnxruntime": float(np.median(s / ort)), "cpu": cpu}
        if b["method"] == "gbxfer" and ("xgb", b["minutes"]) in by:
            row["over_xgbmodel"] = float(np.median(s / by["xgb", b["minutes"]]))
        if b["method"] in runs:
            row["max_abs_diff"] = max(runs[b["method"]]["max_abs_diff"].values())
        rows.append(row)
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = pd.DataFrame(rows)
    keys = sorted(set(zip(frame["model"], frame["threads"])))
    fig, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 3.6), squeeze=False)
    for ax, (model, threads) in zip(axes[0], keys):
        part = frame[(frame["model"] == model) & (frame["threads"] == threads)]
        for method, g in part[part["minutes"] > 0].groupby("method"):
            ax.plot(g["minutes"], g["latency_ms"], marker="o", label=method)
        for method, style in (("ONNX Runtime", "--"), ("untuned", ":")):
            value = part.loc[part["method"] == method, "latency_ms"]
            if len(value):
                ax.axhline(float(value.iloc[0]), ls=style, color="grey", label=method)
        ax.set_title(f"{model}, {threads} thread{'s' if threads > 1 else ''}")
        ax.set_xlabel("tuning minutes")
        ax.set_ylabel("latency (ms)")
        ax.set_yscale("log")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--time-worker":
        return time_worker(json.loads(sys.argv[2]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,bert")
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--points", default="15,30,60",
                        type=lambda s: [float(x) for x in s.split(",")])
    parser.add_argument("--hardware", default="x86-avx2-1t")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--bert-layers", type=int, default=12)
    parser.add_argument("--work", type=Path, default=RESULTS / "bench_onnx")
    parser.add_argument("--name", default="bench_onnx")
    args = parser.parse_args()
    args.points = [p for p in args.points if p <= args.minutes] or [args.minutes]
    import onnx

    cpu, rows = cpu_model(), []
    for model in args.models.split(","):
        work = args.work / f"{model}-seed{args.seed}"
        work.mkdir(parents=True, exist_ok=True)
        path = work / f"{model}.onnx"
        if not path.exists():
            graph = resnet50(args.seed) if model == "resnet50" else bert(
                args.seed, layers=args.bert_layers)
            onnx.save(graph, str(path))
        summaries = {m: tune_run(path, m, args, work / m) for m in METHODS}
        builds = build_points(path, {m: work / m for m in METHODS}, args, work)
        for threads in (1, 2):
            seconds = time_builds(path, builds, threads, args.repeats)
            rows += report(model, builds, seconds, threads, summaries, cpu)
            print_table(rows[-len(builds) - 1:], ["model", "threads", "method", "minutes",
                                                  "trials", "latency_ms", "over_onnxruntime",
                                                  "over_xgbmodel"])
    write_results(args.name, rows, minutes=args.minutes, points=args.points,
                  hardware=args.hardware, seed=args.seed, repeats=args.repeats)
    plot(rows, RESULTS / f"{args.name}.png")


if __name__ == "__main__":
    main()
