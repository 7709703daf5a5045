"""Mutated gbxfer files: every change to a dataset or model folder is detected on load.

Each case copies a small saved dataset, a model or per-profile models, mutates one of its files (a flipped bit, a
truncation, an inserted or deleted byte; in a JSON file also a field replaced by a value of
another type or removed) and loads the copy. A change of content must be a
:class:`~gbxfer.errors.GbxferError` (a checksum, the manifest's own checksum, or a check of the
manifest's fields), never another exception, never a silent load; a mutation that leaves the
content as it was (JSON spacing) must load the same version. ``tests/test_fuzz_files.py`` runs
these cases under Hypothesis in CI; ``python scripts/fuzz_files.py --examples 2000`` runs them
longer and writes scripts/results/fuzz_files.{json,csv}.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from gbxfer import Dataset, load_bundled, train
from gbxfer.errors import GbxferError
from gbxfer.model import load_models, save_models

FILES = {"dataset": ("manifest.json", "records-", "tasks-", "per_store-"),
         "model": ("manifest.json", "booster.txt", "model.json"),
         "per-target": ("manifest.json", "booster.json", "model.json")}
MUTATIONS = ("flip", "truncate", "insert", "delete", "field")
ODD_VALUES = (None, -1, 0, 1e300, "x", "../../etc", [], {}, True, [1, "a"])


def make_originals(folder: Path) -> dict:
    """A 300-record dataset (with per-store features), a 10-tree LightGBM model of it and
    per-profile XGBoost models, saved under ``folder``."""
    bundled = load_bundled()
    small = bundled.select(np.random.default_rng(0).choice(len(bundled), 300, replace=False))
    small.manifest = {"sources": [{"path": "bundled sample"}]}
    small.save(folder / "dataset")
    train(small, {"params": {"n_estimators": 10, "num_leaves": 7}}).save(folder / "model")
    xgboost = {"params": {"backend": "xgboost", "n_estimators": 5, "num_leaves": 7}}
    save_models(folder / "per-target", {hw: train(small, xgboost, target=hw)
                                        for hw in small.hardware[:2]})
    return {kind: folder / kind for kind in FILES}


def file_of(folder: Path, prefix: str) -> Path:
    return next(p for p in sorted(folder.rglob("*")) if p.is_file() and p.name.startswith(prefix))


def mutate(data: bytes, mutation: str, rng: random.Random, is_json: bool) -> bytes:
    if mutation == "flip":
        out = bytearray(data)
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        return bytes(out)
    if mutation == "truncate":
        return data[:rng.randrange(len(data))]
    if mutation == "insert":
        at = rng.randrange(len(data) + 1)
        return data[:at] + bytes([rng.randrange(256)]) + data[at:]
    if mutation == "delete":
        at = rng.randrange(len(data))
        return data[:at] + data[at + rng.randint(1, 16):]
    if not is_json:  # "field" on a binary file: a flipped bit instead
        return mutate(data, "flip", rng, False)
    value = json.loads(data)
    node, path = value, []
    while isinstance(node, (dict, list)) and node and (not path or rng.random() < 0.7):
        key = rng.choice(sorted(node)) if isinstance(node, dict) else rng.randrange(len(node))
        path.append(key)
        node = node[key]
    if not path:
        return json.dumps(rng.choice(ODD_VALUES)).encode()
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and rng.random() < 0.3:
        del parent[path[-1]]
    else:
        parent[path[-1]] = rng.choice(ODD_VALUES)
    return json.dumps(value, indent=rng.choice([None, 1])).encode()


def content_changed(before: bytes, after: bytes, is_manifest: bool) -> bool:
    """Whether a mutation changed what a file says (a manifest's JSON spacing does not)."""
    if not is_manifest:
        return before != after
    try:
        return json.loads(before) != json.loads(after)
    except (ValueError, UnicodeDecodeError):
        return True


def fingerprint(kind: str, folder: Path):
    if kind == "dataset":
        ds = Dataset.load(folder)
        # bytes, not floats: a failed record's NaN latency must compare equal to itself
        return (ds.records["record_id"].tolist(), ds.records["latency"].to_numpy().tobytes())
    return {hw: m.ranker.booster_.model_to_string() if m.ranker.backend == "lightgbm" else
            bytes(m.ranker.booster_.save_raw("json")) for hw, m in load_models(folder).items()}


def run_case(originals: dict, kind: str, prefix: str, mutation: str, rng: random.Random,
             scratch: Path) -> dict:
    """Mutate one file of a copy of ``originals[kind]``, load it; the outcome."""
    copy = scratch / f"{kind}-case"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(originals[kind], copy)
    path = file_of(copy, prefix)
    before = path.read_bytes()
    after = mutate(before, mutation, rng, path.suffix == ".json")
    path.write_bytes(after)
    changed = content_changed(before, after, path.name == "manifest.json")
    try:
        loaded = fingerprint(kind, copy)
    except GbxferError:
        return {"changed": changed, "outcome": "detected", "ok": changed}
    except Exception as exc:  # noqa: BLE001 - what the fuzzing looks for
        return {"changed": changed, "outcome": f"untyped {type(exc).__name__}: {exc}"[:300],
                "ok": False}
    same = loaded == fingerprint(kind, originals[kind])
    return {"changed": changed, "outcome": "loaded" if same else "loaded other content",
            "ok": not changed and same}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000, help="cases per file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _results import print_table, write_results

    rng = random.Random(args.seed)
    rows, failures = [], []
    with tempfile.TemporaryDirectory() as tmp:
        originals = make_originals(Path(tmp) / "originals")
        for kind, prefixes in FILES.items():
            for prefix in prefixes:
                counts = Counter()
                for _ in range(args.examples):
                    mutation = rng.choice(MUTATIONS)
                    result = run_case(originals, kind, prefix, mutation, rng, Path(tmp))
                    counts["changed" if result["changed"] else "unchanged"] += 1
                    counts[result["outcome"].split(":")[0]] += 1
                    if not result["ok"]:
                        failures.append({"kind": kind, "file": prefix, "mutation": mutation,
                                         **result})
                rows.append({"folder": kind, "file": prefix.rstrip("-"), "cases": args.examples,
                             "changed": counts["changed"], "detected": counts["detected"],
                             "unchanged_loaded": counts["loaded"],
                             "changed_undetected": sum(1 for f in failures if f["file"] == prefix
                                                       and f["kind"] == kind and f["changed"]
                                                       and f["outcome"].startswith("loaded")),
                             "untyped": sum(v for k, v in counts.items()
                                            if k.startswith("untyped"))})
    print_table(rows)
    write_results("fuzz_files", rows, examples=args.examples, seed=args.seed,
                  failures=failures[:50])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
