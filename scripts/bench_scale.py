"""Training at TenSet scale: 1M-10M records in one process and on a 2-worker Dask cluster.

    python scripts/bench_scale.py [--sizes 250k,500k,1M,2M,4M,10M] [--seeds 0,1,2] [--work DIR]
                                  [--process-limit-gib 16] [--modes process,dask]

Synthetic datasets are made from real records: the bundled dataset (or --dataset) merged with
the third-party data of ../shared/data, valid records only. Its tasks are split first (30% of
them held out, --split-seed), so that no test task leaks into training: the test set is the
real records of the held-out tasks, and a synthetic training set of N records is copies of the
training tasks, each copy a task of its own (key ``NNNN~KEY``), every record's costs scaled by
a log-normal jitter (sigma 0.05, seeded): whole copies until N records are reached. Each size
is written once under --work (a dataset folder, record tables written one copy at a time:
the generator never holds more than one copy) and reused by later runs.

Every (size, mode, seed) trains the XGBoost model config (configs/model/xgboost.yaml, the
default until 2026-12-04, which the results below measured) as a subprocess: ``process`` is ``gbxfer train`` in one process under ``prlimit --as`` of
--process-limit-gib (a run that dies of it is reported as not fitting, and larger sizes are
not tried); ``dask`` is ``gbxfer train --dask local:2`` (two single-threaded worker
processes: each writes its partitions' features to its local disk, then XGBoost trains over
its collective on quantile matrices built from those files a partition at a time). Measured:
wall-clock seconds; the peak resident memory of the largest process of the run's process tree
and of the tree as a whole (sampled every 0.2 s with psutil); and PCA / top-1 / top-5 of
``gbxfer evaluate`` on the held-out tasks. Results are appended as they come to --work/rows.jsonl (a rerun skips what is
there) and written to scripts/results/bench_scale.{json,csv,png}. Run on an idle machine.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from _bench import SPEED_SOURCES, ci95
from _results import RESULTS, print_table, write_results

from gbxfer import Dataset, ingest, load_dataset
from gbxfer.manifests import file_entry, new_token, prepare_folder, read_manifest, \
    switch_manifest
from gbxfer.records.dataset import FORMAT_NAME, RECORD_SCHEMA, ROW_GROUP, SCHEMA_VERSION, \
    TASK_SCHEMA

DEBRIS = re.compile(r"(records|tasks)-[0-9a-f]{12}\.parquet").fullmatch
JITTER = 0.05  # sigma of the log-normal factor on each synthetic record's costs


def size_option(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1M, 250k, 50000)")
    return int(float(match[1]) * {"": 1, "k": 1e3, "m": 1e6}[match[2].lower()])


def split_tasks(merged: Dataset, fraction: float, seed: int):
    """(training part, test part) of ``merged`` by task key."""
    keys = np.array(sorted(merged.records["task_key"].unique()), dtype=object)
    test = set(np.random.default_rng(seed).permutation(keys)[:round(fraction * len(keys))])
    mask = merged.records["task_key"].isin(test).to_numpy()
    return merged.select(~mask), merged.select(mask)


def copy_of(base: Dataset, k: int, rng) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Copy ``k`` of ``base``: its tasks renamed ``kkkk~KEY``, ids made unique, costs jittered
    (the latency scaled with them, so it stays their median)."""
    prefix = f"{k:04d}~"
    r = base.records.copy()
    factor = np.exp(rng.normal(0.0, JITTER, len(r)))
    r["task_key"] = prefix + r["task_key"]
    r["program_id"] = prefix + r["program_id"]
    r["record_id"] = prefix + r["record_id"]
    r["costs"] = [np.asarray(c, dtype=float) * f for c, f in zip(r["costs"], factor)]
    r["latency"] = r["latency"].to_numpy() * factor
    t = base.tasks.copy()
    t["task_key"] = prefix + t["task_key"]
    return r, t


def write_synthetic(base: Dataset, size: int, folder: Path, seed: int) -> int:
    """A dataset folder of about ``size`` records (whole copies of ``base``, the last one cut
    at a task x hardware group boundary), written one copy at a time; its record count."""
    manifest_path = folder / "manifest.json"
    if manifest_path.exists():
        manifest = read_manifest(folder, FORMAT_NAME, (SCHEMA_VERSION,), "dataset")
        if manifest.get("synthetic", {}).get("size") == size:
            return manifest["n_records"]
    prepare_folder(folder, FORMAT_NAME, "dataset", DEBRIS)
    token = new_token()
    tables = {"records": f"records-{token}.parquet", "tasks": f"tasks-{token}.parquet"}
    rng = np.random.default_rng(seed)
    written, task_parts = 0, []
    with pq.ParquetWriter(folder / tables["records"], RECORD_SCHEMA,
                          compression="zstd") as writer:
        for k in range(math.ceil(size / len(base))):
            records, tasks = copy_of(base, k, rng)
            if written + len(records) > size:  # the last copy: whole groups up to the size
                ends = records.groupby(["task_key", "hardware"], sort=False).size().cumsum()
                keep = ends[ends <= size - written]
                records = records.iloc[:int(keep.iloc[-1]) if len(keep) else 0]
                tasks = tasks[tasks["task_key"].isin(records["task_key"])]
            writer.write_table(pa.Table.from_pandas(records, schema=RECORD_SCHEMA,
                                                    preserve_index=False))
            task_parts.append(tasks)
            written += len(records)
    pq.write_table(pa.Table.from_pandas(pd.concat(task_parts, ignore_index=True),
                                        schema=TASK_SCHEMA, preserve_index=False),
                   folder / tables["tasks"], compression="zstd", row_group_size=ROW_GROUP["tasks"])
    switch_manifest(folder, {
        "format": FORMAT_NAME, "schema_version": SCHEMA_VERSION, "tables": tables,
        "n_records": written, "synthetic": {"size": size, "seed": seed, "jitter": JITTER},
        "files": {name: file_entry(folder, name) for name in tables.values()}}, DEBRIS)
    return written


def base_datasets(args, work: Path) -> tuple[Path, Dataset]:
    """The held-out test dataset's folder and the training part to copy (both cached)."""
    test_path, base_path = work / "test", work / "base"
    if not (base_path / "manifest.json").exists():
        parts = [load_dataset(args.dataset)] + [ingest([s]) for s in SPEED_SOURCES
                                                if s.exists()]
        merged = Dataset.concat(parts).filter(valid=True)
        train, test = split_tasks(merged, args.test_fraction, args.split_seed)
        train.per_store = test.per_store = None
        test.save(test_path)
        # sorted by task and hardware: a copy's groups lie together, and so do a Dask
        # partition's (a contiguous run of sorted task keys)
        train.records = train.records.sort_values(["task_key", "hardware"],
                                                  kind="stable").reset_index(drop=True)
        train.save(base_path)
    return test_path, Dataset.load(base_path)


def run_measured(command: list[str]) -> dict:
    """Run ``command``; wall-clock seconds, exit status, the peak resident memory of its
    largest process and of its process tree (GiB, sampled every 0.2 s) and its output."""
    import psutil

    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    peak = {"largest": 0, "tree": 0}
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True)
    reader.start()
    root = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            rss = [p.memory_info().rss for p in [root, *root.children(recursive=True)]]
        except psutil.Error:
            rss = []
        if rss:
            peak["largest"] = max(peak["largest"], max(rss))
            peak["tree"] = max(peak["tree"], sum(rss))
        time.sleep(0.2)
    reader.join()
    return {"seconds": round(time.perf_counter() - start, 1), "rc": proc.returncode,
            "peak_largest_gib": round(peak["largest"] / 2**30, 3),
            "peak_tree_gib": round(peak["tree"] / 2**30, 3), "output": "".join(output)}


def train_and_evaluate(data: Path, test: Path, mode: str, seed: int, args, work: Path) -> dict:
    model = work / "models" / f"{data.name}-{mode}-{seed}"
    gbxfer = [sys.executable, "-m", "gbxfer"]
    command = [*gbxfer, "train", str(data), "-q", "--seed", str(seed), "--config", "xgboost",
               "--out", str(model)]
    if mode == "dask":
        command += ["--dask", f"local:{args.workers}"]
    else:
        command = ["prlimit", f"--as={int(args.process_limit_gib * 2**30)}", "--", *command]
    run = run_measured(command)
    row = {"mode": mode, "seed": seed, **{k: v for k, v in run.items() if k != "output"}}
    if run["rc"] != 0:
        row["error"] = run["output"].strip().splitlines()[-1][:200] if run["output"] else ""
        return row
    report = json.loads(subprocess.run([*gbxfer, "evaluate", str(model), str(test), "--json",
                                        "-q"],
                                       check=True, capture_output=True, text=True).stdout)
    row.update({m: round(report[m], 4) for m in ("pca", "top1", "top5")})
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bundled")
    parser.add_argument("--sizes", default="250k,500k,1M,2M,4M,10M",
                        type=lambda s: [size_option(x) for x in s.split(",")])
    parser.add_argument("--seeds", default="0,1,2", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--modes", default="process,dask", type=lambda s: s.split(","))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--process-limit-gib", type=float, default=16.0)
    parser.add_argument("--test-fraction", type=float, default=0.3)
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/gbxfer-scale"))
    parser.add_argument("--name", default="bench_scale")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    test, base = base_datasets(args, args.work)
    print(f"training tasks: {base.records['task_key'].nunique()} ({len(base)} records); "
          f"test: {read_manifest(test, FORMAT_NAME, (SCHEMA_VERSION,), 'dataset')['n_records']}"
          " records of the held-out tasks", flush=True)
    log = args.work / "rows.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    done = {(r["size"], r["mode"], r["seed"]) for r in rows}
    too_big = {r["mode"]: r["size"] for r in rows if r["mode"] == "process" and r["rc"] != 0}
    for size in args.sizes:
        data = args.work / f"synthetic-{size}"
        start = time.perf_counter()
        n = write_synthetic(base, size, data, seed=args.split_seed)
        print(f"{data}: {n} records ({time.perf_counter() - start:.0f} s)", flush=True)
        for mode in args.modes:
            for seed in args.seeds:
                if (size, mode, seed) in done or size > too_big.get(mode, math.inf):
                    continue
                row = {"size": size, "records": n,
                       **train_and_evaluate(data, test, mode, seed, args, args.work)}
                print(json.dumps(row), flush=True)
                rows.append(row)
                with open(log, "a") as f:
                    f.write(json.dumps(row) + "\n")
                if row["rc"] != 0 and mode == "process":  # out of its memory limit
                    too_big[mode] = size
                    break
    summary = summarise(rows)
    print_table(summary)
    write_results(args.name, rows, summary=summary)
    plot(summary, RESULTS / f"{args.name}.png")


def summarise(rows: list[dict]) -> list[dict]:
    """Per (size, mode): runs, mean seconds, the largest peaks, mean PCA and its 95% CI."""
    out = []
    frame = pd.DataFrame(rows)
    for (size, mode), g in frame.groupby(["size", "mode"], sort=True):
        ok = g[g["rc"] == 0]
        row = {"size": size, "mode": mode, "runs": len(g), "ok": len(ok),
               "seconds": round(ok["seconds"].mean(), 1) if len(ok) else None,
               "peak_largest_gib": g["peak_largest_gib"].max(),
               "peak_tree_gib": g["peak_tree_gib"].max()}
        if len(ok):
            row["pca"], row["pca_ci"] = (round(v, 4) for v in ci95(ok["pca"]))
            row["top1"] = round(ok["top1"].mean(), 4)
        out.append(row)
    return out


def plot(summary: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = pd.DataFrame(summary)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    for mode, g in frame.groupby("mode"):
        g = g[g["ok"] > 0]
        if g.empty:
            continue
        for ax, column in zip(axes, ("seconds", "peak_largest_gib", "pca")):
            ax.plot(g["size"] / 1e6, g[column], marker="o", label=mode)
            ax.set_xlabel("training records (millions)")
            ax.set_ylabel(column)
    axes[1].axhline(8, color="grey", ls=":", lw=1)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
