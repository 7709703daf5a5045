"""Fuzz the Ansor and MetaSchedule readers with mutated real lines: typed errors, no bad records.

    python scripts/fuzz_formats.py [--examples 5000] [--seed 0]

Each case writes a small source made of real lines (tests/data, the example database), one of
them mutated, and ingests it with and without ``skip_bad``. Field mutations replace, delete or
reshape one value at a random JSON path (inside a workload key's or target's JSON text too);
byte mutations flip, cut or splice the line's bytes. A case is ``input-error`` (the strict
ingest raised InputError), ``accepted`` (in domain: :func:`record_problems` finds nothing),
``untyped`` (any other exception) or ``out-of-domain`` (a record out of its domain, or
skip_bad disagreeing with the strict ingest). Results: scripts/results/fuzz_formats.json.

The mutations and the domain checker live here, in one place: tests/test_fuzz_formats.py
imports this file and drives :func:`make_case` with Hypothesis' random instances.
"""
from __future__ import annotations

import argparse
import collections
import copy
import gzip
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path

from gbxfer import GbxferError, InputError, ingest
from gbxfer.records.targets import profile_name_problem

REPO = Path(__file__).resolve().parents[1]
ANSOR_SAMPLES = ["gpu_rtx3080/ansor_matmul.json.gz", "gpu_a100/ansor_conv2d.json.gz",
                 "gpu_a100/ansor_reduce.json.gz", "cpu_x86/x86_resnet18.json.gz",
                 "cpu_x86/cpu_matmul.json.gz"]
MS_DATABASES = [REPO / "gbxfer" / "data" / "example-metaschedule",
                REPO / "tests" / "data" / "bennu-metaschedule-a100-resnet34"]
FORMATS = ("ansor", "ms-record", "ms-workload")
FIELD_MUTATIONS = ("other-type", "bad-number", "wrong-shape", "delete", "insert", "odd-string")
BYTE_MUTATIONS = ("byte-flip", "truncate", "byte-splice")
MUTATIONS = FIELD_MUTATIONS + BYTE_MUTATIONS

BAD_NUMBERS = [0, -1, -0.0, 0.0, -1e-9, 1e9, 1e10, 1e308, -1e308, 2**63 - 1, -2**63, 2**64,
               5e-324, 1e-300, float("nan"), float("inf"), float("-inf"), True, False, "1",
               "NaN", "Infinity", 1.5, -7, 3]
ODD_STRINGS = ["", " ", "\x00", "a/b", "..", ".hidden", "\u00e9\u2028", "llvm", "cuda",
               "cuda -arch=sm_80 -num-cores=-1", "llvm -mcpu=a/b", 'llvm "open', "-keys=cpu",
               "{}", '{"kind": 1}', '{"kind": "llvm", "num-cores": 0}', "[]", '["x"]',
               '["x", [0, 1]]', '["x", [-1]]', '["x", 2, 0]', "TENSOR", "float32",
               "x" * 1000, "GetSBlock", "EnterPostproc", "123", "-5"]


# --------------------------------------------------------------------------- samples
class Samples:
    """Real lines to mutate: Ansor lines, and per database its workload line 0 and the
    records of that workload (so that a case needs only one workload line)."""

    def __init__(self, per_file: int = 40):
        self.ansor: list[bytes] = []
        for name in ANSOR_SAMPLES:
            with gzip.open(REPO / "tests" / "data" / "bennu-ansor" / name, "rb") as f:
                self.ansor += [line.rstrip(b"\n") for line in f if line.strip()][:per_file]
        self.databases = []
        for folder in MS_DATABASES:
            workload = _read_lines(folder, "database_workload.json")[0]
            records = [line for line in _read_lines(folder, "database_tuning_record.json")
                       if json.loads(line)[0] == 0][:per_file]
            self.databases.append((workload, records))


def _read_lines(folder: Path, name: str) -> list[bytes]:
    path = folder / name
    data = path.read_bytes() if path.is_file() else gzip.decompress((folder / (name + ".gz"))
                                                                     .read_bytes())
    return [line for line in data.splitlines() if line.strip()]


# --------------------------------------------------------------------------- mutations
def make_case(samples: Samples, fmt: str, mutation: str, rng: random.Random) -> dict:
    """Files (name -> bytes) of one case: a few real lines of ``fmt``, one of them mutated."""
    if fmt == "ansor":
        lines = [rng.choice(samples.ansor) for _ in range(3)]
        i = rng.randrange(len(lines))
        lines[i] = mutate_line(lines[i], mutation, rng)
        return {"log.json": b"\n".join(lines) + b"\n"}
    workload, records = rng.choice(samples.databases)
    records = [rng.choice(records) for _ in range(3)]
    if fmt == "ms-record":
        i = rng.randrange(len(records))
        records[i] = mutate_line(records[i], mutation, rng)
    else:
        workload = mutate_line(workload, mutation, rng)
    return {"database_workload.json": workload + b"\n",
            "database_tuning_record.json": b"\n".join(records) + b"\n"}


def mutate_line(line: bytes, mutation: str, rng: random.Random) -> bytes:
    """``line`` (one JSON value) with one field or byte mutation."""
    if mutation in BYTE_MUTATIONS:
        return mutate_bytes(line, mutation, rng)
    value = mutate_value(json.loads(line), mutation, rng)
    return json.dumps(value).encode()  # NaN and Infinity come out as (non-JSON) literals


def mutate_value(value, mutation: str, rng: random.Random):
    """A copy of ``value`` with the node at a random path mutated; a node that is JSON text
    (an Ansor workload key, a target string) is mutated inside half of the time."""
    value = copy.deepcopy(value)
    path = random_path(value, rng)
    if not path:
        return _mutated_node(value, mutation, rng)
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if mutation == "delete":
        del parent[key]
        return value
    if mutation == "insert":
        extra = _value_of_type(rng.choice(_TYPES), rng)
        if isinstance(parent, list):
            parent.insert(rng.randrange(len(parent) + 1), extra)
        else:
            parent[rng.choice(["x", "kind", "mcpu", "num-cores", key + "_"])] = extra
        return value
    node = parent[key]
    inner = _json_text(node)
    if inner is not None and isinstance(inner, (list, dict)) and inner and rng.random() < 0.5:
        parent[key] = json.dumps(mutate_value(inner, mutation, rng))
    else:
        parent[key] = _mutated_node(node, mutation, rng)
    return value


def random_path(value, rng: random.Random) -> list:
    """Keys from the root to a random node, descending with probability 3/4 at each level."""
    path, node = [], value
    while isinstance(node, (list, dict)) and node and (not path or rng.random() < 0.75):
        key = rng.randrange(len(node)) if isinstance(node, list) else rng.choice(sorted(node))
        path.append(key)
        node = node[key]
    return path


def _mutated_node(node, mutation: str, rng: random.Random):
    if mutation == "other-type":
        return _value_of_type(rng.choice([t for t in _TYPES if not _is_type(node, t)]), rng)
    if mutation == "bad-number":
        return rng.choice(BAD_NUMBERS)
    if mutation == "odd-string":
        return rng.choice(ODD_STRINGS)
    if mutation == "wrong-shape":
        how = rng.choice(["wrap", "wrap2", "unwrap", "to-dict", "to-list", "empty"])
        if how == "wrap":
            return [node]
        if how == "wrap2":
            return [[node]]
        if how == "unwrap" and isinstance(node, (list, dict)) and node:
            return node[0] if isinstance(node, list) else next(iter(node.values()))
        if how == "to-dict" and isinstance(node, list):
            return {str(i): v for i, v in enumerate(node)}
        if how == "to-list" and isinstance(node, dict):
            return list(node.values())
        return {} if isinstance(node, list) else []
    return None  # delete or insert at the root: the line becomes null


_TYPES = ("null", "bool", "int", "float", "str", "list", "dict")


def _is_type(node, kind: str) -> bool:
    return {"null": node is None, "bool": isinstance(node, bool),
            "int": isinstance(node, int) and not isinstance(node, bool),
            "float": isinstance(node, float), "str": isinstance(node, str),
            "list": isinstance(node, list), "dict": isinstance(node, dict)}[kind]


def _value_of_type(kind: str, rng: random.Random):
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.choice([0, 1, -1, 42, 2**40])
    if kind == "float":
        return rng.choice([0.5, -2.5, 1e-6, 3.0])
    if kind == "str":
        return rng.choice(ODD_STRINGS)
    if kind == "list":
        return rng.choice([[], [1], [-1, 2], ["TENSOR", "float32", [1]], [[1, 2]], [None]])
    return rng.choice([{}, {"kind": "llvm"}, {"kind": 1}, {"a": [1]}])


def _json_text(node):
    if not isinstance(node, str) or not node[:1] in ("[", "{"):
        return None
    try:
        return json.loads(node)
    except ValueError:
        return None


def mutate_bytes(line: bytes, mutation: str, rng: random.Random) -> bytes:
    data = bytearray(line)
    if mutation == "truncate":
        return bytes(data[:rng.randrange(len(data))])
    if mutation == "byte-flip":
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    start = rng.randrange(len(data))
    end = min(len(data), start + rng.randint(1, 16))
    how = rng.choice(["cut", "repeat", "insert"])
    if how == "cut":
        return bytes(data[:start] + data[end:])
    if how == "repeat":
        return bytes(data[:end] + data[start:end] + data[end:])
    noise = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return bytes(data[:start] + noise + data[start:])


# --------------------------------------------------------------------------- checking
def record_problems(ds) -> list[str]:
    """What is out of domain in an ingested dataset (empty when every record is in domain):
    :meth:`Dataset.validate`, plus per record a hardware name fit for a profile, a target JSON
    object with a ``kind`` string and finite positive costs, and per task argument shapes that
    are lists of positive integers."""
    problems = []
    try:
        ds.validate("fuzzed")
    except GbxferError as exc:
        problems.append(str(exc))
    for rec in ds.records.itertuples():
        where = f"record {rec.source}:{rec.line}"
        if profile_name_problem(rec.hardware):
            problems.append(f"{where}: hardware {rec.hardware!r}")
        if not isinstance(rec.hardware_family, str) or not rec.hardware_family:
            problems.append(f"{where}: hardware family {rec.hardware_family!r}")
        target = json.loads(rec.target) if isinstance(rec.target, str) else None
        if not isinstance(target, dict) or not isinstance(target.get("kind"), str) \
                or not target["kind"]:
            problems.append(f"{where}: target {rec.target!r}")
        costs = list(rec.costs)
        if not all(math.isfinite(c) and c > 0 for c in costs) or rec.valid != bool(costs):
            problems.append(f"{where}: costs {costs} (valid={rec.valid})")
        if rec.valid and not (math.isfinite(rec.latency) and rec.latency > 0):
            problems.append(f"{where}: latency {rec.latency}")
        if not isinstance(rec.program, str) or not rec.program:
            problems.append(f"{where}: empty program")
    for task in ds.tasks.itertuples():
        if not isinstance(task.task_key, str) or not task.task_key.strip():
            problems.append(f"task {task.task_key!r}: empty key")
        args = json.loads(task.args)
        if not isinstance(args, list) or not all(_is_tensor_arg(a) for a in args):
            problems.append(f"task {task.task_key[:40]!r}: args {task.args[:80]}")
    return problems


def _is_tensor_arg(arg) -> bool:
    return (isinstance(arg, list) and len(arg) == 2 and isinstance(arg[0], str)
            and isinstance(arg[1], list)
            and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in arg[1]))


def run_case(files: dict, folder: Path) -> dict:
    """Ingest one case strictly and with ``skip_bad``; what came of it.

    ``outcome`` is ``input-error``, ``accepted``, ``untyped`` or ``out-of-domain``; ``reason``
    the InputError's; ``untyped`` the repr of an exception of another type; ``problems``
    the records out of domain and disagreements between the two ingests.
    """
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    source = folder / "log.json" if "log.json" in files else folder
    result = {"outcome": "", "reason": "", "untyped": "", "problems": []}
    strict = None
    try:
        strict = ingest([source])
        result["problems"] += record_problems(strict)
    except InputError as exc:
        result["reason"] = exc.reason
    except GbxferError as exc:
        result["reason"] = type(exc).__name__
    except Exception as exc:  # noqa: BLE001 (what the fuzzing looks for)
        result["untyped"] = f"strict: {exc!r}"[:300]
    try:
        lenient = ingest([source], skip_bad=True)
        result["problems"] += record_problems(lenient)
        skipped = sum(lenient.manifest["skipped"].values())
        if strict is not None and (skipped or len(lenient) != len(strict)):
            result["problems"].append(f"skip_bad skipped {skipped} lines the strict ingest read")
        if result["reason"] and not skipped:
            result["problems"].append(f"strict raised {result['reason']}, skip_bad skipped none")
    except Exception as exc:  # noqa: BLE001 (with skip_bad, not even InputError may escape)
        result["untyped"] = result["untyped"] or f"skip_bad: {exc!r}"[:300]
    result["outcome"] = ("untyped" if result["untyped"] else "out-of-domain"
                         if result["problems"] else "input-error" if result["reason"]
                         else "accepted")
    return result


# --------------------------------------------------------------------------- the script
def _mutated_file(files: dict, fmt: str) -> str:
    name = {"ansor": "log.json", "ms-record": "database_tuning_record.json"}.get(
        fmt, "database_workload.json")
    return files[name][:3000].decode("utf-8", "replace")


def main() -> None:
    from _results import print_table, write_results

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=5000, help="cases per format")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    samples = Samples()
    counts = collections.defaultdict(collections.Counter)
    reasons = collections.defaultdict(collections.Counter)
    failures = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for f, fmt in enumerate(FORMATS):
            rng = random.Random(args.seed * 1000 + f)
            for i in range(args.examples):
                mutation = MUTATIONS[i % len(MUTATIONS)]
                files = make_case(samples, fmt, mutation, rng)
                result = run_case(files, Path(tmp) / f"{fmt}-{i}")
                counts[fmt, mutation][result["outcome"]] += 1
                reasons[fmt][result["reason"] or result["outcome"]] += 1
                if result["outcome"] in ("untyped", "out-of-domain") and len(failures) < 50:
                    failures.append({"format": fmt, "mutation": mutation, "case": i, **result,
                                     "mutated": _mutated_file(files, fmt)})
            print(f"{fmt}: {args.examples} cases, {time.perf_counter() - started:.0f} s",
                  file=sys.stderr)
    columns = ["input-error", "accepted", "untyped", "out-of-domain"]
    rows = [{"format": fmt, "mutation": mutation, "cases": sum(c.values()),
             **{k: c[k] for k in columns}} for (fmt, mutation), c in counts.items()]
    rows += [{"format": fmt, "mutation": "all", "cases": sum(sum(c.values()) for (g, _), c
                                                            in counts.items() if g == fmt),
              **{k: sum(c[k] for (g, _), c in counts.items() if g == fmt) for k in columns}}
             for fmt in FORMATS]
    print_table(rows)
    write_results("fuzz_formats", rows, seed=args.seed, examples_per_format=args.examples,
                  seconds=round(time.perf_counter() - started, 1),
                  reasons={fmt: dict(c) for fmt, c in reasons.items()}, failures=failures)


if __name__ == "__main__":
    main()
