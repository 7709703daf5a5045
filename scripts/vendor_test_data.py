"""Cut the small samples of the third-party data that the test suite runs on.

Reads the full files in ``../shared/data`` (which users and clean clones do not have) and writes
``tests/data/`` (committed): a few hundred lines of every Ansor log, and a slice of the older-TVM
A100 MetaSchedule database (five workloads with their records), each with its LICENSE, plus
``tests/data/README.md`` giving what was kept and the counts a reader must reproduce. The counts
are computed here from the raw JSON, without gbxfer, so that the tests that compare gbxfer's
ingest with them check something.

Deterministic: the same input gives byte-identical output (gzip without a timestamp).

    python scripts/vendor_test_data.py [--shared ../shared/data] [--out tests/data]
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ANSOR = "bennu-ansor"
MS = "bennu-metaschedule-a100-resnet34"
HEAD = 60  # the first lines of every Ansor log
PER_TASK = 4  # the first lines of each task of a log with many tasks
SHARED_PER_FILE = 25  # programs measured on both GPUs, per file
REPEATED_PER_FILE = 10  # programs measured twice on one GPU, per file (both lines kept)
MS_WORKLOADS = (17, 18, 19, 4, 0)  # reshape, dense, softmax, max-pool, 1x1 conv2d
MS_PER_WORKLOAD = 60
MS_REPEATED = 5
FAILED_COST = 1e9  # MetaSchedule writes 1e10 s for a failed build or run


def _lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def _write_gz(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                filename="") as f:
        f.write(data)


def _ansor_program(line: str) -> tuple[str, str]:
    value = json.loads(line)
    return value["i"][0][0], json.dumps(value["i"][1][1], separators=(",", ":"))


def _ansor_failed(line: str) -> bool:
    return json.loads(line)["r"][1] != 0


def sample_ansor(src: Path, out: Path) -> dict:
    """Sample every log; return the counts per device folder."""
    logs = {p.relative_to(src): _lines(p) for p in sorted(src.glob("*/*.json.gz"))}
    programs = defaultdict(set)
    for rel, lines in logs.items():
        programs[rel.parts[0]].update(_ansor_program(line) for line in lines)
    on_both = programs["gpu_a100"] & programs["gpu_rtx3080"]
    counts = defaultdict(Counter)
    for rel, lines in logs.items():
        device = rel.parts[0]
        keep = set(range(min(HEAD, len(lines))))
        keep |= {i for i, line in enumerate(lines) if _ansor_failed(line)}
        keys = [_ansor_program(line) for line in lines]
        by_task = defaultdict(list)
        for i, (task, _) in enumerate(keys):
            by_task[task].append(i)
        if len(by_task) > 1:
            keep |= {i for rows in by_task.values() for i in rows[:PER_TASK]}
        if device.startswith("gpu_"):
            keep |= set([i for i, k in enumerate(keys) if k in on_both][:SHARED_PER_FILE])
        seen = Counter(keys)
        repeated = [k for k in dict.fromkeys(keys) if seen[k] > 1][:REPEATED_PER_FILE]
        keep |= {i for i, k in enumerate(keys) if k in set(repeated)}
        kept = [lines[i] for i in sorted(keep)]
        _write_gz(out / rel, kept)
        counts[device]["lines"] += len(kept)
        counts[device]["failed"] += sum(_ansor_failed(line) for line in kept)
    sampled = defaultdict(set)
    for rel in logs:
        sampled[rel.parts[0]].update(_ansor_program(line) for line in _lines(out / rel))
    for device, progs in sampled.items():
        counts[device]["programs"] = len(progs)
        counts[device]["tasks"] = len({task for task, _ in progs})
    counts["gpu_a100"]["on_both_gpus"] = len(sampled["gpu_a100"] & sampled["gpu_rtx3080"])
    shutil.copyfile(src / "LICENSE", out / "LICENSE")
    return {device: dict(c) for device, c in counts.items()}


def _ms_program(record: list) -> str:
    text = json.dumps(record[1][0], separators=(",", ":"))
    return f"{record[0]}|" + text.replace('["GetBlock",', '["GetSBlock",')


def sample_metaschedule(src: Path, out: Path) -> dict:
    """Keep the workloads in MS_WORKLOADS (renumbered in that order) and some of their records."""
    workloads = _lines(src / "database_workload.json")
    records = [json.loads(line) for line in _lines(src / "database_tuning_record.json.gz")]
    renumber = {old: new for new, old in enumerate(MS_WORKLOADS)}
    kept = []
    for old in MS_WORKLOADS:
        mine = [r for r in records if r[0] == old]
        seen = Counter(_ms_program(r) for r in mine)
        repeated = [p for p in dict.fromkeys(_ms_program(r) for r in mine) if seen[p] > 1]
        repeated = set(repeated[:MS_REPEATED])
        chosen = [r for i, r in enumerate(mine)
                  if i < MS_PER_WORKLOAD or _ms_program(r) in repeated]
        kept += [[renumber[old], r[1]] for r in chosen]
    out.mkdir(parents=True, exist_ok=True)
    _write_gz(out / "database_workload.json.gz", [workloads[old] for old in MS_WORKLOADS])
    _write_gz(out / "database_tuning_record.json.gz",
              [json.dumps(r, separators=(", ", ": ")) for r in kept])
    shutil.copyfile(src / "LICENSE", out / "LICENSE")
    failed = sum(max(r[1][1]) >= FAILED_COST for r in kept)
    by_program = defaultdict(list)
    for r in kept:
        by_program[_ms_program(r)].append(max(r[1][1]) < FAILED_COST)
    return {"lines": len(kept), "workloads": len(MS_WORKLOADS), "programs": len(by_program),
            "valid_programs": sum(any(v) for v in by_program.values()),
            "valid_measurements": len(kept) - failed}


README = """# Samples of the third-party data, for the test suite

Cut from `../shared/data` by `scripts/vendor_test_data.py` (deterministic; rerun it to remake
them). Measured by others on real hardware; data only, under their own license (MIT, copyright
(c) 2023 Michael Canesche; source lac-dcc/bennu, commit ad7179973cc9bf6242e91eb9166b920dd36bc7ad):
`LICENSE` beside each copy. Tests that need the whole files are marked `shared_data`.

## `{ansor}/` — Ansor measure-record logs (A100, RTX 3080, an x86 CPU)

Every log of the full set, same folders and file names, each cut to its first {head} lines, its
failed lines, the first {per_task} lines of each task (logs with many tasks), up to {shared}
programs measured on both GPUs and up to {repeated} programs measured twice (both lines).
Counts, from the raw JSON (a program = workload key + step list):

| folder | lines | distinct programs | failed lines | tasks |
|---|---|---|---|---|
{ansor_rows}

Programs measured on both the A100 and the RTX 3080: {on_both}.

## `{ms}/` — an older-TVM MetaSchedule database (A100, ResNet-34)

Five of its 20 workloads (reshape, dense, softmax, max-pool, 1x1 conv2d, renumbered 0-4 in that
order), each with its first {ms_per} records and every record of its first {ms_rep} programs
measured more than once; both files gzip-compressed. {ms_lines} record lines, {ms_programs}
distinct programs (workload + trace, instruction names in their TVM 0.27 spelling) of which
{ms_valid} have a valid measurement, {ms_measure} valid measurements.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "data")
    args = parser.parse_args()
    for name in (ANSOR, MS):
        shutil.rmtree(args.out / name, ignore_errors=True)
    ansor = sample_ansor(args.shared / ANSOR, args.out / ANSOR)
    ms = sample_metaschedule(args.shared / MS, args.out / MS)
    rows = "\n".join(f"| {d} | {c['lines']} | {c['programs']} | {c['failed']} | {c['tasks']} |"
                     for d, c in sorted(ansor.items()))
    (args.out / "README.md").write_text(README.format(
        ansor=ANSOR, ms=MS, head=HEAD, per_task=PER_TASK, shared=SHARED_PER_FILE,
        repeated=REPEATED_PER_FILE, ansor_rows=rows, on_both=ansor["gpu_a100"]["on_both_gpus"],
        ms_per=MS_PER_WORKLOAD, ms_rep=MS_REPEATED, ms_lines=ms["lines"],
        ms_programs=ms["programs"], ms_valid=ms["valid_programs"],
        ms_measure=ms["valid_measurements"]))
    print(json.dumps({"ansor": ansor, "metaschedule": ms}, indent=1))


if __name__ == "__main__":
    main()
