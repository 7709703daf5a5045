"""Does foreign data help the by-task model? Bundled training tasks, with and without the
third-party Ansor logs of ../shared/data added to the training set.

    python scripts/bench_extra_data.py [--dataset bundled] [--seeds 5]

For each seed the by-task split of the bundled dataset (test fraction 0.3) fixes the test
tasks; each arm trains the default config on the bundled training part plus its extra
records (all of them: other programs, other tasks, other hardware) and is scored on the same
bundled test part. The learning curve (scripts/learning_curve.py) says by-task quality grows
with the number of training tasks; this asks whether tasks measured elsewhere, in Ansor's
program representation, count too. No Ansor task is a bundled task: the x86 logs' ResNet-18
convolutions are NCHWc with bias and ReLU fused, the bundled ones NCHW and unfused (similar
shapes, other tasks, kept). Mean +- 95% CI over seeds, and of
the paired per-seed differences to bundled only (d_*).
Results: scripts/results/bench_extra_data.{json,csv}.
"""
from __future__ import annotations

import numpy as np
from _results import print_table, write_results
from _bench import BASE, SHARED, experiment, mean_ci

from gbxfer import Dataset, SplitSpec, ingest
from gbxfer.features import build
from gbxfer.metrics import ranking_report
from gbxfer.model import GBCostRanker, load_model_config

METRICS = ("pca", "top1", "top5")
ARMS = {"bundled only": [], "+ Ansor x86 (29 tasks)": ["cpu_x86"],
        "+ Ansor x86 and GPUs": ["cpu_x86", "gpu_a100", "gpu_rtx3080"]}


def main() -> None:
    args, dataset, _ = experiment(__doc__)
    logs = SHARED / "bennu-ansor"
    if not logs.exists():
        raise SystemExit(f"needs the Ansor logs in {logs}")
    config = load_model_config()
    extra = {name: ingest([logs / p for p in parts]).filter(valid=True) if parts else None
             for name, parts in ARMS.items()}
    results: dict = {}
    for name, more in extra.items():
        merged = Dataset.concat([dataset, more]) if more is not None else dataset
        fm = build(merged, BASE)
        r = fm.records
        ours = r["record_id"].isin(dataset.records["record_id"]).to_numpy()
        for seed in args.seed_list:
            mask = SplitSpec("by-task", 0.3, seed).test_mask(dataset)
            test_tasks = set(dataset.records["task_key"][mask])
            test = ours & r["task_key"].isin(test_tasks).to_numpy()
            train = ~r["task_key"].isin(test_tasks).to_numpy()
            model = GBCostRanker(**{**config.params, "random_state": seed}).fit(
                fm.X[train], r["label"][train], groups=r["group"][train])
            report = ranking_report(r["latency"][test], model.predict(fm.X[test]),
                                    r["group"][test], r["weight"][test])
            results.setdefault(name, []).append({**report, "train": int(train.sum())})
        print(f"{name} done", flush=True)
    base = results["bundled only"]
    rows = []
    for name, reports in results.items():  # and the paired difference to bundled only
        deltas = [{f"d_{m}": rep[m] - ref[m] for m in METRICS} for rep, ref in
                  zip(reports, base, strict=True)]
        rows.append({"arm": name, "seeds": len(reports),
                     "train_records": float(np.mean([rep["train"] for rep in reports])),
                     **mean_ci(reports, METRICS),
                     **mean_ci(deltas, [f"d_{m}" for m in METRICS])})
    print_table(rows)
    write_results("bench_extra_data", rows, dataset=args.dataset, test_fraction=0.3)


if __name__ == "__main__":
    main()
