"""ONNX models tuned by gbxfer and by TVM's XGBModel, against ONNX Runtime on the same machine.

    python scripts/bench_onnx.py [--models resnet50,bert,squeezenet] [--minutes 60]
                                 [--points 15,30,60]
                                 --hardware PROFILE [--seed 0] [--repeats 15] [--jobs N]
                                 [--population N] [--online MODE] [--work DIR]
                                 [--bert-layers 12] [--layout as-is|nhwc]
                                 [--weight-layout as-is|packed] [--methods gbxfer,xgb]
                                 [--name bench_onnx]

Builds real architectures as ONNX graphs in code, with seeded random weights (latency does
not depend on their values): ResNet-50 (batch 1, 3 x 224 x 224, NCHW, batch norm folded into
the convolutions' bias), a BERT-base encoder (12 layers, hidden 768, 12 heads, FFN 3072,
GELU, LayerNormalization; batch 1, sequence 128; hidden states in) and, asked for by name,
SqueezeNet 1.1 (batch 1, 3 x 224 x 224, NCHW). Tunes each on --hardware
(give this machine's native ISA at 1 thread, e.g. spr-avx512-1t) for --minutes with ``gbxfer
tune --onnx`` and the gbxfer cost model (the pretrained model, online updates), and with
``--cost-model xgb`` (TVM's XGBModel), both with ``--jobs`` (threads searching, workers
building; by default ``gbxfer tune``'s, the usable cores; gbxfer's run with ``--population``,
by default ``gbxfer tune``'s, XGBModel's with MetaSchedule's 512): one run each, saved under
--work as it finishes (a rerun skips finished runs and timings; a work folder resumes only on
the CPU model and profile that began it). Each run's database as it was at each of --points
minutes by the tuning curve's clock (the last point: the shorter run's end, as both overrun the
budget by their last batch) is compiled to a library named by its trial count
(``<method>-<trials>t.so``; with the run's ``parallel_within`` when it recorded one above 0, as
``gbxfer tune`` builds by default since 2026-12-05, ``<method>-<trials>t-p<F>.so``). Then, in
one process per thread count (1 and 2), every library's outputs are checked against ONNX
Runtime's on seeded random inputs (the largest absolute difference, the output's scale, within
tolerance as ``gbxfer tune`` states it); ONNX Runtime (defaults except intra-op threads = the
count, inter-op 1) and every tuned library are timed in --repeats rounds, each timing every
build once (mean over >= 0.5 s) in a seeded shuffled order, TVM untuned in the first round only
(two orders of magnitude slower; its ratio is the median of those to each round's ONNX
Runtime). gbxfer's latency over XGBModel's is the median of the per-round ratios, as is each
build's over ONNX Runtime's. Reported too: the first point at which gbxfer's build is as fast
as ONNX Runtime, or its ratio at the end. Every row records the CPU model (name, family, model,
stepping). Run on an idle machine. Results: scripts/results/<name>.{json,csv,png}, written
after each model, hold every model and seed timed in --work on this machine and profile
(``rows.json`` of each work folder); the libraries and runs under --work. ``--layout nhwc``
tunes both runs and builds every library with the convolutions in NHWC (``gbxfer tune
--layout``); a work folder's runs are resumed only with the layout they were tuned in.
``--weight-layout packed`` does the same for ``gbxfer tune --weight-layout packed`` (the rows'
model and the work folder end in ``-packed``). Both stay ``as-is`` by default here, whatever
``gbxfer tune``'s defaults, so that earlier commands rerun as they were.

Rule for ``gbxfer tune --onnx``'s default layout, written 2026-12-07 15:56 UTC, after seeing
the first 15 minutes of the Zen 3's nhwc tuning curve (tuning's weighted latency 156 ms where
the as-is run had 180 ms at 15 minutes) and before any of its timings: ``nhwc`` becomes the
default if, in ``bench_onnx_zen3_nhwc`` (ResNet-50, seed 0) against ``bench_onnx_zen3_60``
(the as-is run of the same seed on the same CPU model), gbxfer's 1-thread latency over ONNX
Runtime's (a ratio within each run, so the two runs' machine states cancel) is at least 5%
lower at 30 and at 60 minutes, and its outputs match ONNX Runtime's within tolerance. One run
of each layout: indicative, said so where reported.

Rule for ``--weight-layout packed``, written 2026-12-07 19:27 UTC, before any whole network was
tuned with it (a one-layer BERT probe in scratch, XGBModel, 256 trials over its five matmul
tasks, tuning's own timings: the FFN's first matmul 10.4 ms packed against 17.1 ms as-is, the
weighted sum 32.5 against 45.0 ms): in ``bench_onnx_zen3_bert_packed`` (BERT, seed 0, 30
minutes, points 15 and 30, x86-avx2-1t, both runs packed), issue 22's BERT target is met in the
packed configuration if gbxfer's 1-thread latency over XGBModel's is at most 0.9 at 30 minutes,
outputs within tolerance. The run does not change ``gbxfer tune --onnx``'s default: no as-is
BERT run exists on this CPU model to compare with; packed becomes the default once a same-CPU
pair shows gbxfer's 1-thread latency over ONNX Runtime's at least 5% lower packed than as-is at
30 minutes, outputs within tolerance. Added 2026-12-07 19:44 UTC, during the packed run's
gbxfer half, before any of its timings: that pair is ``bench_onnx_zen3_bert_packed`` against
``bench_onnx_zen3_bert`` (``--models bert --seed 0 --minutes 30 --points 15,30 --methods
gbxfer``, as-is, on the same CPU model and profile).

Rule for packed weights in convolution networks, written 2026-12-07 22:05 UTC, before any
convolution network was tuned packed (BERT's same-CPU pair showed no gain: 1.306x ONNX Runtime
packed against 1.258x as-is at 30 minutes): in ``bench_onnx_zen3_resnet50_packed``
(``--models resnet50 --seed 0 --minutes 30 --points 15,30 --methods gbxfer --layout nhwc
--weight-layout packed --hardware x86-avx2-1t --work scripts/results/bench_onnx_zen3_packed``)
against ``bench_onnx_zen3_nhwc`` (the nhwc as-is run of the same seed on the same CPU model,
its 30-minute point; by the tuning curve's clock a 60-minute run's first 30 minutes are a
30-minute run's), if gbxfer's 1-thread latency over ONNX Runtime's is at least 5% lower packed
at 30 minutes, outputs within tolerance, ``gbxfer tune --onnx`` packs the weights by default
where the network has a convolution task and keeps them as stored otherwise; if not, the
default stays as-is for every network. One run of each: indicative.
Amended 2026-12-07 22:48 UTC, during the packed run's tuning and before any of its timings:
the same BERT library's ratio to ONNX Runtime moved by 8% between two timings an hour apart
(1.305x, then 1.416x), more than the 5% asked for, so the decision reads instead a paired
timing of the two runs' 30-minute libraries in the same rounds (``scripts/time_builds.py``,
15 rounds, 1 thread): packed where the packed library's latency over the nhwc one's (median of
the per-round ratios) is at most 0.95, outputs within tolerance. The ratios over ONNX Runtime
of the rule as first written are reported beside it.

Rule for packing models without convolutions, written 2026-12-07 23:36 UTC, before the timing it
reads (the unpaired timings had been seen: gbxfer's BERT 1.306x ONNX Runtime packed against
1.258x and, an hour later, 1.373x as-is; XGBModel's 1.19x packed against 1.44x as-is): BERT's
30-minute libraries of both runs timed together (``scripts/time_builds.py --name
time_builds_zen3_bert_packed``, 15 rounds, in the order gbxfer as-is, gbxfer packed, XGBModel
as-is, XGBModel packed): ``gbxfer tune --onnx`` packs every model's weights by default, not
only those with convolutions, if gbxfer's packed library over its as-is one is at most 0.95 at
1 thread, outputs within tolerance; XGBModel's pair is reported beside it.

Rule for the defaults on a CNN outside the suite, written 2026-12-08 01:20 UTC, before
SqueezeNet 1.1 (``--models squeezenet``: none of its convolution shapes is a suite task) was
tuned with any setting: ``gbxfer tune --onnx``'s defaults for convolution networks (``--layout
nhwc --weight-layout packed``, chosen on ResNet-50, whose NHWC convolutions the pretrained model
trained on) are tried against the model's own layouts (``as-is``, ``as-is``), gbxfer only, seed
0, 30 minutes, points 15 and 30, x86-avx2-1t, work folder ``scripts/results/bench_onnx_zen3_sq``
(``--name bench_onnx_zen3_squeezenet_asis`` and ``..._default``), then both 30-minute libraries
timed together (``scripts/time_builds.py --name time_builds_zen3_squeezenet``, 15 rounds, as-is
first). The defaults hold on this network if the default library's 1-thread latency over the
as-is one's is at most 0.95, outputs within tolerance; if it is 1.05 or more they hurt it, and
README and ``gbxfer tune --help`` say that the layout defaults were chosen on ResNet-50 and lost
on SqueezeNet; in between, no difference this machine can show. One run each: indicative.
Clarified 2026-12-08 03:54 UTC, after the as-is run and its timings against ONNX Runtime (1.94x
at 30 minutes) and before the default run was started, thresholds unchanged: the default run is
the as-is run's command with ``--layout nhwc --weight-layout packed``, and the ratio read is
``time_builds.py``'s 1-thread ``over_first`` (the median of the per-round ratios, as-is listed
first).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from _results import RESULTS, print_table, stamp, write_results

from gbxfer.online import DEFAULT_MODE, MODES
from gbxfer.tvm._networks import WEIGHT_LAYOUTS
from gbxfer.tvm._onnx import LAYOUTS
from gbxfer.records._parallel import usable_cpus

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


def squeezenet(seed: int = 0):
    """SqueezeNet 1.1 (Iandola et al. 2016; torchvision's layers): fire modules, a 1x1
    squeeze convolution then 1x1 and 3x3 expand convolutions concatenated. Its convolution
    shapes are none of the suite's: a CNN the pretrained model never saw."""
    g = Graph(seed)

    def conv(x, cin, cout, k, stride=1, pad=None):
        w = g.weight((cout, cin, k, k), np.sqrt(2.0 / (cin * k * k)))
        return g.op("Relu", [g.op("Conv", [x, w, g.weight((cout,), 0.1)], kernel_shape=[k, k],
                                  strides=[stride, stride],
                                  pads=[k // 2 if pad is None else pad] * 4)])

    def fire(x, cin, squeeze, expand):
        s = conv(x, cin, squeeze, 1)
        return g.op("Concat", [conv(s, squeeze, expand, 1), conv(s, squeeze, expand, 3)],
                    axis=1)

    def pool(x):
        return g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    x = pool(conv("data", 3, 64, 3, stride=2, pad=0))
    x = pool(fire(fire(x, 64, 16, 64), 128, 16, 64))
    x = pool(fire(fire(x, 128, 32, 128), 256, 32, 128))
    for cin, squeeze, expand in ((256, 48, 192), (384, 48, 192), (384, 64, 256),
                                 (512, 64, 256)):
        x = fire(x, cin, squeeze, expand)
    x = g.op("Flatten", [g.op("GlobalAveragePool", [conv(x, 512, 1000, 1)])])
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


MODELS = {"resnet50": resnet50, "bert": bert, "squeezenet": squeezenet}


# ---------------------------------------------------------------- tuning and builds
def method_list(text: str) -> list[str]:
    """``--methods``: names of ``METHODS``, comma-separated, in ``METHODS``' order."""
    names = text.split(",")
    unknown = [name for name in names if name not in METHODS]
    if unknown:
        raise argparse.ArgumentTypeError(f"{unknown[0]!r}: the methods are "
                                         f"{','.join(METHODS)}")
    return [m for m in METHODS if m in names]


def cpu_model() -> str:
    """The CPU as lscpu names it, with its family, model and stepping: a KVM guest's model
    name alone can be as generic as "Intel(R) Xeon(R) Processor"."""
    fields: dict = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return "{} (family {} model {} stepping {})".format(
        fields.get("model name", stamp()["machine"]["cpu"]), *(
            fields.get(k, "?") for k in ("cpu family", "model", "stepping")))


def same_machine(path: Path, cpu: str, hardware: str) -> None:
    """Runs in one work folder resume only on the machine (CPU model, profile) that began
    them: all rows of one table come from one machine."""
    mine = {"cpu": cpu, "hardware": hardware}
    if not path.exists():
        path.write_text(json.dumps(mine) + "\n")
    elif json.loads(path.read_text()) != mine:
        raise SystemExit(f"{path.parent} holds runs of {path.read_text().strip()}, not of this "
                         f"machine ({json.dumps(mine)}): give another --work")


def tune_run(model_path: Path, method: str, args, out: Path) -> dict:
    """One tuning run (skipped when its summary exists, unless Ctrl-C cut it short); its
    summary."""
    written = out / "summary.json"
    if written.exists() and json.loads(written.read_text()).get("interrupted"):
        written.unlink()  # stopped before its budget was spent: tuned again below
    if written.exists():
        summary = json.loads(written.read_text())
        if summary["budget"] != {"minutes": args.minutes}:
            raise SystemExit(f"{out} was tuned for {summary['budget']}, not {args.minutes:g} "
                             "minutes: give another --work")
        if (jobs := summary.get("jobs", 1)) != args.jobs:  # 1 before --jobs was recorded
            raise SystemExit(f"{out} was tuned with --jobs {jobs}, not "
                             f"{args.jobs}: give --jobs {jobs} or another --work")
        population = summary.get("population", 512)  # 512 before it was recorded
        if method == "gbxfer" and population != args.population:
            raise SystemExit(f"{out} was tuned with --population {population}, not "
                             f"{args.population}: give another --work")
        layout = summary.get("layout") or "as-is"  # (as-is too for a model without conv2d)
        convolutions = any("conv" in task for task in summary.get("weights", {}))
        if layout != args.layout and (convolutions or layout != "as-is"):
            raise SystemExit(f"{out} was tuned with --layout {layout}, not {args.layout}: "
                             "give another --work")
        weight_layout = summary.get("weight_layout") or "as-is"  # as-is before it was recorded
        if weight_layout != args.weight_layout:
            raise SystemExit(f"{out} was tuned with --weight-layout {weight_layout}, not "
                             f"{args.weight_layout}: give another --work")
        online = summary.get("online", {}).get("mode", "blend")
        if method == "gbxfer" and args.online not in (None, online):
            raise SystemExit(f"{out} was tuned with --online {online}, not {args.online}: "
                             "give another --work")
        return summary
    if out.exists():  # a run killed midway starts again
        import shutil

        shutil.rmtree(out)
    command = [sys.executable, "-m", "gbxfer", "tune", "--onnx", str(model_path), "--hardware",
               args.hardware, "--minutes", str(args.minutes), "--cost-model", method,
               "--seed", str(args.seed), "--jobs", str(args.jobs), "--layout", args.layout,
               "--weight-layout", args.weight_layout, "--out", str(out)]
    if method == "gbxfer":
        command[-2:-2] = ["--population", str(args.population), "--online",
                          args.online or DEFAULT_MODE]
    print("$", " ".join(command), flush=True)
    # a Ctrl-C reaches the child too: it stops after its batch in flight (status 130) and is
    # waited for, not killed by subprocess.run's own KeyboardInterrupt
    previous = signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        done = subprocess.run(command, check=False)  # outputs beyond tolerance: 2, all written
    finally:
        signal.signal(signal.SIGINT, previous)
    if done.returncode == 130:
        raise SystemExit(f"tuning run {out} interrupted")
    if not (out / "summary.json").exists():
        raise SystemExit(f"tuning run {out} failed")
    return json.loads((out / "summary.json").read_text())


def cut_trials(curves: dict, minutes: float, args) -> dict:
    """``{method: trials measured by the cut}``: ``minutes`` into each run by its curve's
    clock; at the end of the budget, the shorter run's end (the batch running when the budget
    ends finishes after it, so runs overrun it by different amounts)."""
    cut = 60 * minutes if minutes < args.minutes else min(c["seconds"].max()
                                                          for c in curves.values())
    return {m: int(c["trials"][c["seconds"] <= cut].max()) if (c["seconds"] <= cut).any()
            else 0 for m, c in curves.items()}


def build_points(model_path: Path, runs: dict, summaries: dict, args,
                 work: Path) -> list[dict]:
    """Libraries of the untuned model and of each run's database at each point, named by
    their trial count (a library is compiled once and kept), each built as its run's `gbxfer
    tune` built its network: with the summary's ``parallel_within`` (0, as tuned, for runs
    from before it was recorded or became 0.02 by default on 2026-12-05); ``summaries``: each
    run's summary.json, as read."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.hardware import load_profile
    from gbxfer.tvm._networks import compile_network, database_prefix, scheduled_functions
    from gbxfer.tvm._onnx import export_module, load_onnx

    curves = {m: pd.read_csv(folder / "curve.csv") for m, folder in runs.items()}
    wanted = [("untuned", 0, 0)] + [(m, p, cut_trials(curves, p, args)[m])
                                    for m in runs for p in args.points]
    index = work / "builds.json"  # library name -> scheduled functions
    scheduled = json.loads(index.read_text()) if index.exists() else {}
    network, target, builds = None, tvm.target.Target(load_profile(args.hardware).target), []
    within = {m: s.get("parallel_within") or 0.0 for m, s in summaries.items()}
    # as each run recorded it (as-is where nothing was packable)
    packed = {m: s.get("weight_layout") == "packed" for m, s in summaries.items()}
    for method, minutes, trials in wanted:
        share = within[method] if trials else 0.0
        path = work / "{}-{}t{}.so".format(method if trials else "untuned", trials,  # 0: untuned
                                            f"-p{share:g}" if share else "")
        if not path.exists() or path.name not in scheduled:
            if network is None:
                network = load_onnx(model_path, layout=args.layout)
            database = ms.database.MemoryDatabase() if not trials else \
                database_prefix(runs[method] / "metaschedule", trials)
            pack = packed[method] if trials else False
            scheduled[path.name] = "{}/{}".format(*scheduled_functions(network.mod, database,
                                                                       target, pack))
            export_module(compile_network(network.mod, database, target, share, pack), path)
            index.write_text(json.dumps(scheduled, indent=1))
            print(f"built {path.name} ({method}, {minutes:g} min)", flush=True)
        builds.append({"method": method, "minutes": minutes, "trials": trials,
                       "parallel_within": share, "library": str(path),
                       "scheduled": scheduled[path.name]})
    return builds


def time_builds(model_path: Path, builds: list[dict], threads: int, args) -> dict:
    """In a fresh process with TVM_NUM_THREADS = ``threads``: each library's outputs checked
    against ONNX Runtime's, and seconds per inference of ONNX Runtime and of every library in
    ``args.repeats`` interleaved rounds. Kept in ``timed-<threads>t.json`` beside the model,
    so that a rerun killed during the next thread count resumes there."""
    libraries = list(dict.fromkeys(b["library"] for b in builds))
    spec = {"model": str(model_path), "libraries": libraries, "threads": threads,
            "repeats": args.repeats, "seed": args.seed, "untuned_rounds": 1}
    # kept for these very files: names (the folder may move), sizes and modification times
    identity = {**spec, "model": model_path.name, "libraries": [
        [Path(p).name, Path(p).stat().st_size, Path(p).stat().st_mtime_ns] for p in libraries]}
    kept = model_path.parent / f"timed-{threads}t.json"
    if kept.exists() and (saved := json.loads(kept.read_text()))["spec"] == identity:
        return saved["timed"]
    timed = run_timing(spec)
    partial = kept.with_suffix(".partial")
    partial.write_text(json.dumps({"spec": identity, "timed": timed}) + "\n")
    partial.replace(kept)
    return timed


def run_timing(spec: dict) -> dict:
    """:func:`time_worker` on ``spec`` in a fresh process with TVM_NUM_THREADS = its threads
    (TVM sizes its thread pool once): its timings and output checks."""
    threads = spec["threads"]
    env = {**os.environ, "TVM_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    result = subprocess.run([sys.executable, __file__, "--time-worker", json.dumps(spec)],
                            env=env, check=False, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"timing at {threads} threads failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def time_worker(spec: dict) -> None:
    """Every round times ONNX Runtime and each library once, in an order shuffled per round
    (seeded), so that no build always runs just after another; the untuned library, two
    orders of magnitude slower (a minute per BERT inference), only in the first round."""
    import onnx
    import tvm

    from gbxfer.tvm._networks import time_network
    from gbxfer.tvm._onnx import OnnxNetwork, compare_outputs, onnxruntime_session, \
        random_inputs, run_executable, time_onnxruntime

    graph = onnx.load(spec["model"], load_external_data=False).graph
    weights = {w.name for w in graph.initializer}
    inputs = {i.name: (tuple(d.dim_value for d in i.type.tensor_type.shape.dim),
                       np.dtype(np.float32)) for i in graph.input if i.name not in weights}
    feeds = random_inputs(OnnxNetwork(Path(spec["model"]), inputs, [], None))
    session = onnxruntime_session(spec["model"], spec["threads"])
    output_names = [o.name for o in session.get_outputs()]
    expected = session.run(output_names, feeds)
    arrays = list(feeds.values())
    libraries = {Path(path).name: tvm.runtime.load_module(path) for path in spec["libraries"]}
    checks = {}
    for name, library in libraries.items():
        outputs = compare_outputs(output_names, run_executable(library, arrays), expected)
        checks[name] = {"max_abs_diff": max((o["max_abs_diff"] for o in outputs.values()),
                                            key=lambda d: np.inf if d is None else d),
                        "scale": max(o["scale"] or 0.0 for o in outputs.values()),
                        "within_tolerance": all(o["within_tolerance"] for o in outputs.values())}
    timers = {"onnxruntime": lambda: time_onnxruntime(session, feeds, repeat=1,
                                                      min_repeat_ms=500),
              **{name: functools.partial(time_network, library, arrays, repeat=1,
                                         min_repeat_ms=500) for name, library in
                 libraries.items()}}
    seconds = interleaved(timers, spec["repeats"], spec["seed"], first_round_only=[
        name for name in libraries if name.startswith("untuned-")])
    print(json.dumps({"seconds": seconds, "checks": checks}))


def interleaved(timers: dict, rounds: int, seed: int, first_round_only=()) -> dict:
    """``{key: seconds}``: every round calls each timer (which returns a list of seconds) once,
    in an order shuffled per round (seeded); those in ``first_round_only`` in round one only."""
    seconds, rng = {key: [] for key in timers}, np.random.default_rng(seed)
    for round_ in range(rounds):
        for key in rng.permutation(list(timers)):
            if not (round_ and key in first_round_only):
                seconds[key] += timers[key]()
    return seconds


# ---------------------------------------------------------------- report
def report(model: str, builds, timed: dict, threads: int, cpu: str) -> list[dict]:
    """One row per build and one for ONNX Runtime; ratios are medians of per-round ratios."""
    seconds, checks = timed["seconds"], timed["checks"]
    ort = np.asarray(seconds["onnxruntime"])
    rows = [{"model": model, "threads": threads, "method": "ONNX Runtime", "minutes": 0,
             "trials": 0, "latency_ms": 1e3 * float(np.median(ort)),
             "over_onnxruntime": 1.0, "cpu": cpu}]
    # the untuned library has one round: its ratios are to every round's ONNX Runtime
    by = {(b["method"], b["minutes"]): np.asarray(seconds[Path(b["library"]).name])
          for b in builds}
    for b in builds:
        s = by[b["method"], b["minutes"]]
        row = {"model": model, "threads": threads,
               "method": METHODS.get(b["method"], b["method"]), "minutes": b["minutes"],
               "trials": b["trials"], "scheduled": b["scheduled"],
               "parallel_within": b["parallel_within"],
               "latency_ms": 1e3 * float(np.median(s)),
               "over_onnxruntime": float(np.median(s / ort)), "cpu": cpu,
               **checks[Path(b["library"]).name]}
        if b["method"] == "gbxfer" and ("xgb", b["minutes"]) in by:
            row["over_xgbmodel"] = float(np.median(s / by["xgb", b["minutes"]]))
        rows.append(row)
    return rows


def matches_onnxruntime(rows: list[dict]) -> dict:
    """Per model and thread count: the first tuning minutes at which gbxfer's build is at
    least as fast as ONNX Runtime (median of per-round ratios <= 1), or None, with the ratio
    at the last point."""
    out = {}
    for row in rows:
        if row["method"] == "gbxfer":
            key = f"{row['model']} seed {row['seed']}, {row['threads']} threads"
            entry = out.setdefault(key, {"minutes": None})
            if entry["minutes"] is None and row["over_onnxruntime"] <= 1:
                entry["minutes"] = row["minutes"]
            entry["ends_at_over_onnxruntime"] = row["over_onnxruntime"]
    return out


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = pd.DataFrame(rows)
    keys = sorted(set(zip(frame["model"], frame["threads"])))
    fig, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 3.6), squeeze=False)
    for ax, (model, threads) in zip(axes[0], keys):
        part = frame[(frame["model"] == model) & (frame["threads"] == threads)]
        seeds = part["seed"].nunique() > 1
        for (method, seed), g in part[part["minutes"] > 0].groupby(["method", "seed"]):
            ax.plot(g["minutes"], g["latency_ms"], marker="o",
                    label=f"{method}, seed {seed}" if seeds else method)
        for method, style in (("ONNX Runtime", "--"), ("untuned", ":")):
            value = part.loc[part["method"] == method, "latency_ms"].median()
            if np.isfinite(value):
                ax.axhline(float(value), ls=style, color="grey", label=method)
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
    parser.add_argument("--models", default="resnet50,bert",
                        help="of resnet50, bert and squeezenet (default: resnet50,bert)")
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--points", default="15,30,60",
                        type=lambda s: [float(x) for x in s.split(",")])
    parser.add_argument("--hardware", required=True,
                        help="a 1-thread profile of this machine's native ISA, e.g. "
                             "spr-avx512-1t (gbxfer hardware list)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--jobs", type=int, default=usable_cpus(),
                        help="gbxfer tune --jobs: threads searching, workers building "
                             "(default: gbxfer tune's, the usable cores)")
    parser.add_argument("--population", type=int,
                        help="gbxfer tune --population for gbxfer's run (default: gbxfer "
                             "tune's; XGBModel's: 512)")
    parser.add_argument("--online", choices=MODES,
                        help="gbxfer tune --online for gbxfer's run (default: a new run "
                             f"{DEFAULT_MODE}, gbxfer tune's default; a run already in --work "
                             "as it was tuned)")
    parser.add_argument("--methods", type=method_list, default=list(METHODS),
                        help="the cost models to tune and time, of gbxfer,xgb (default: both; "
                             "a later run with both tunes only the missing one and times "
                             "every library together)")
    parser.add_argument("--bert-layers", type=int, default=12)
    parser.add_argument("--layout", choices=list(LAYOUTS), default="as-is",
                        help="gbxfer tune --layout for both runs and every build")
    parser.add_argument("--weight-layout", choices=list(WEIGHT_LAYOUTS), default="as-is",
                        help="gbxfer tune --weight-layout for both runs and every build")
    parser.add_argument("--work", type=Path, default=RESULTS / "bench_onnx")
    parser.add_argument("--name", default="bench_onnx")
    args = parser.parse_args()
    unknown = set(args.models.split(",")) - set(MODELS)
    if unknown:
        parser.error(f"--models: {sorted(unknown)[0]!r}; the models are {','.join(MODELS)}")
    if args.jobs < 1 or (args.population is not None and args.population < 1):
        parser.error("--jobs and --population: at least 1")
    from gbxfer.tvm._tune import GBXFER_POPULATION

    args.population = args.population or GBXFER_POPULATION  # gbxfer tune's with --minutes
    args.points = sorted(p for p in args.points if p <= args.minutes) or [args.minutes]
    import onnx

    cpu = cpu_model()
    columns = ["model", "seed", "threads", "method", "minutes", "trials", "scheduled",
               "parallel_within",
               "latency_ms", "over_onnxruntime", "over_xgbmodel", "max_abs_diff",
               "within_tolerance"]
    for model in args.models.split(","):
        base = model if model != "bert" or args.bert_layers == 12 else f"bert{args.bert_layers}"
        suffix = ("-nhwc" if args.layout == "nhwc" else "") + (
            "-packed" if args.weight_layout == "packed" else "")
        label = base + suffix  # the rows' model: layouts told apart in the table
        work = args.work / f"{base}-seed{args.seed}{suffix}"
        work.mkdir(parents=True, exist_ok=True)
        same_machine(work / "machine.json", cpu, args.hardware)
        path = work / f"{model}.onnx"
        if not path.exists():
            graph = MODELS[model](args.seed, **(
                {"layers": args.bert_layers} if model == "bert" else {}))
            onnx.save(graph, str(path))
        summaries = {method: tune_run(path, method, args, work / method)
                     for method in args.methods}
        # blend before the mode was recorded; none when only XGBModel was asked for
        online = summaries["gbxfer"].get("online", {}).get("mode", "blend") \
            if "gbxfer" in summaries else None
        within = {m: s.get("parallel_within") or 0.0 for m, s in summaries.items()}
        if len(set(within.values())) > 1:  # e.g. a run copied in from before the default
            print(f"warning: the runs' libraries are built with different --parallel-within "
                  f"({within}): the ratios between them compare build rules too", flush=True)
        builds = build_points(path, {m: work / m for m in args.methods}, summaries, args, work)
        rows = []
        for threads in (1, 2):
            rows += [{**row, "seed": args.seed} for row in report(
                label, builds, time_builds(path, builds, threads, args), threads, cpu)]
            print_table(rows[-len(builds) - 1:], columns)
        (work / "rows.json").write_text(json.dumps(rows, indent=1) + "\n")
        # the table: every model and seed timed on this machine and profile in --work
        rows = [row for folder in sorted(args.work.glob("*/rows.json"))
                if json.loads((folder.parent / "machine.json").read_text()) == {
                    "cpu": cpu, "hardware": args.hardware}
                for row in json.loads(folder.read_text())]
        matches = matches_onnxruntime(rows)
        for key, entry in matches.items():
            print(f"{key}: gbxfer matches ONNX Runtime at {entry['minutes']} min" if entry[
                "minutes"] is not None else f"{key}: gbxfer does not match ONNX Runtime in "
                f"{args.minutes:g} min; it ends at {entry['ends_at_over_onnxruntime']:.3g}x")
        write_results(args.name, rows, minutes=args.minutes, points=args.points,
                      hardware=args.hardware, repeats=args.repeats, jobs=args.jobs,
                      population=args.population, online=online, layout=args.layout,
                      weight_layout=args.weight_layout, cpu=cpu,
                      matches_onnxruntime=matches)
        plot(rows, RESULTS / f"{args.name}.png")


if __name__ == "__main__":
    main()
