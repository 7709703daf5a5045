"""kill -9 at random moments of each writing command; after each kill the output must be the
old complete version or the new one, and a rerun must complete with the new one.

Every other kill starts from no output at all (a first write: afterwards there must be none,
or the new version); the others from an old version (afterwards: the old one or the new one).

Commands (on ``small``, a 10% random sample of ``bundled``):
  ingest            example MetaSchedule database + the Ansor sample, over an older ingest
  train             joint model, over one trained with another seed
  train-per-target  per-profile models, over a joint model
  prune             coreset, over a random prune
  transfer          3 shots per task to x86-sse42-1t, over a transfer with another seed
  study             3 workers x 6 trials on one SQLite storage: after the kill, the trials
                    finished are <= the budget and distinct; the rerun (3 workers again) ends
                    with exactly the budget finished, no duplicate parameters, none RUNNING
  collect           1 task x 4 programs on this machine (MetaSchedule lines whole, no repeat);
                    every other kill lands 0-2 s after the 1st, 2nd or 3rd measurement is written
  dataset-save      (--only) a process saving two datasets in turn into one folder, killed at a
  model-save        random moment of its loop; a joint model and per-profile models in turn

A fingerprint is what a version holds, not how it is stored: a dataset's records (ids,
latencies), a model's boosters and training record ids. ``python scripts/crash_test.py
--kills 20`` prints a table and writes scripts/results/crash_test.{json,csv}.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
from optuna.trial import TrialState

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import RESULTS, print_table, stamp, write_results  # noqa: E402

from gbxfer import load_dataset  # noqa: E402
from gbxfer.errors import GbxferError  # noqa: E402
from gbxfer.model import load_models  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GBXFER = [sys.executable, "-m", "gbxfer"]
TINY_SUITE = "name: tiny\nnetworks:\n  toy:\n    - {op: dense, shape: {M: 16, N: 32, K: 16}}\n"
STUDY_CONFIG = ("blocks: [program, workload, hardware]\n"
                "params: {n_estimators: 40, num_leaves: 15}\n")


def dataset_print(path: Path):
    ds = load_dataset(path)
    r = ds.records.sort_values("record_id")
    return hashlib.sha256(json.dumps([r["record_id"].tolist(), r["latency"].round(15).tolist(),
                                      sorted(ds.tasks["task_key"])]).encode()).hexdigest()


def model_print(path: Path):
    models = load_models(path)
    return hashlib.sha256(json.dumps(sorted(
        [str(hw), m.ranker.booster_.model_to_string() if m.ranker.backend == "lightgbm"
         else str(m.ranker.booster_.save_raw("json")), m.train_record_ids]
        for hw, m in models.items())).encode()).hexdigest()


def collect_print(path: Path):
    """The programs measured: MetaSchedule lines all whole and distinct; the dataset, when
    written, holds exactly them."""
    db = path / "metaschedule" / "host-1t" / "database_tuning_record.json"
    lines = db.read_bytes().splitlines() if db.exists() else []
    traces = [json.dumps(json.loads(line)[1][0]) for line in lines]  # raises if torn
    if len(set(traces)) != len(traces):
        raise GbxferError("a program measured twice")
    if (path / "dataset" / "manifest.json").exists():
        n = len(load_dataset(path / "dataset"))
        if n != len(traces):
            raise GbxferError(f"dataset holds {n} records for {len(traces)} measured")
    return len(traces)


def commands(work: Path, seed: int) -> dict:
    """name -> (old-version command or None, new-version command, fingerprint), OUT standing
    for the output."""
    small = str(work / "small")
    return {
        "ingest": ([*GBXFER, "ingest", str(REPO / "gbxfer/data/example-metaschedule"), "--out",
                    "OUT", "-q"],
                   [*GBXFER, "ingest", str(REPO / "gbxfer/data/example-metaschedule"),
                    str(REPO / "tests/data/bennu-ansor"), "--out", "OUT", "-q"], dataset_print),
        "train": ([*GBXFER, "train", small, "--out", "OUT", "--seed", "1", "-q"],
                  [*GBXFER, "train", small, "--out", "OUT", "-q"], model_print),
        "train-per-target": ([*GBXFER, "train", small, "--out", "OUT", "-q"],
                             [*GBXFER, "train", small, "--per-target", "--out", "OUT", "-q"],
                             model_print),
        "prune": ([*GBXFER, "prune", small, "--keep", "0.5", "--method", "random", "--out", "OUT",
                   "-q"],
                  [*GBXFER, "prune", small, "--keep", "0.5", "--method", "coreset", "--out",
                   "OUT", "-q"], dataset_print),
        "transfer": ([*GBXFER, "transfer", str(work / "source"), "--target-data", small,
                      "--hardware", "x86-sse42-1t", "--shots", "3", "--seed", "1", "--out", "OUT",
                      "-q"],
                     [*GBXFER, "transfer", str(work / "source"), "--target-data", small,
                      "--hardware", "x86-sse42-1t", "--shots", "3", "--out", "OUT", "-q"],
                     model_print),
        "collect": (None, [*GBXFER, "collect", "--suite", str(work / "tiny.yaml"), "--hardware",
                           str(work / "host-1t.yaml"), "--programs", "4", "--out", "OUT",
                           "--batch-size", "1", "--repeats", "1", "--min-repeat-ms", "1",
                           "--seed", str(seed), "-q"], collect_print),
    }


def prepare(work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "small" / "manifest.json").exists():
        run([*GBXFER, "prune", "bundled", "--keep", "0.1", "--method", "random", "--out",
             str(work / "small"), "-q"])
    if not (work / "source" / "manifest.json").exists():
        run([*GBXFER, "train", str(work / "small"), "--target", "x86-avx2-1t", "--out",
             str(work / "source"), "-q"])
    (work / "tiny.yaml").write_text(TINY_SUITE)
    (work / "study.yaml").write_text(STUDY_CONFIG)
    sys.path.insert(0, str(REPO / "tests"))
    from conftest import write_host_profile
    write_host_profile(work)


def run(argv, timeout=900) -> float:
    start = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {result.stderr[-2000:]}")
    return time.monotonic() - start


def start(argvs, logs=None) -> list:
    """Processes in their own groups; their stderr to the files ``logs`` (or nowhere)."""
    return [subprocess.Popen(a, stdout=subprocess.DEVNULL, start_new_session=True,
                             stderr=open(logs[i], "w") if logs else subprocess.DEVNULL)
            for i, a in enumerate(argvs)]


def kill_after(procs, delay: float) -> bool:
    """SIGKILL every process group after ``delay`` s; whether any was still running."""
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        time.sleep(0.01)
    alive = any(p.poll() is None for p in procs)
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
    return alive


def kill_when(procs, ready, extra: float, timeout: float) -> bool:
    """SIGKILL every process group ``extra`` s after ``ready()`` first holds (or after
    ``timeout`` s); whether any was still running."""
    deadline = time.monotonic() + timeout
    while (time.monotonic() < deadline and not ready()
           and any(p.poll() is None for p in procs)):
        time.sleep(0.01)
    return kill_after(procs, extra)


def measured_lines(out: Path) -> int:
    db = out / "metaschedule" / "host-1t" / "database_tuning_record.json"
    return db.read_bytes().count(b"\n") if db.exists() else 0


def wait(proc, timeout: float) -> int:
    """Exit status, or "hung" (and the process group killed) after ``timeout`` s."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_after([proc], 0)
        return "hung"


def fingerprint(fn, path: Path):
    """What the output holds; None when there is none yet (no folder, or a killed first write:
    no manifest)."""
    if not path.exists() or (fn is not collect_print and not (path / "manifest.json").exists()):
        return None
    try:
        return fn(path)
    except (GbxferError, ValueError, OSError) as exc:
        return f"unreadable: {exc}"


def crash_command(name, old, new, fn, work: Path, kills: int, rng) -> dict:
    out = work / f"out-{name}"
    old_copy = work / f"old-{name}"
    sub = lambda argv: [str(out) if a == "OUT" else a for a in argv]  # noqa: E731
    for path in (out, old_copy):
        shutil.rmtree(path, ignore_errors=True)
    if old:
        run(sub(old))
        shutil.copytree(out, old_copy)
    old_print = fingerprint(fn, out)
    seconds = run(sub(new))
    new_print = fingerprint(fn, out)
    rows = []
    for i in range(kills):
        shutil.rmtree(out, ignore_errors=True)
        first_write = old is None or i % 2 == 1  # every other kill: no old version to keep
        if not first_write:
            shutil.copytree(old_copy, out)
        delay = rng.uniform(0.02, 1.0) * seconds
        if name == "collect" and i % 2 == 1:  # during the measurements, not only before
            lines, extra = 1 + (i // 2) % 3, rng.uniform(0.0, 2.0)
            begin = time.monotonic()
            killed = kill_when(start([sub(new)]), lambda: measured_lines(out) >= lines, extra,
                               2 * seconds)
            delay = time.monotonic() - begin
        else:
            killed = kill_after(start([sub(new)]), delay)
        after = fingerprint(fn, out)
        before = None if first_write else old_print
        intact = (after in (before, new_print) if name != "collect" else
                  isinstance(after, int) or after is None)
        run(sub(new))
        rerun = fingerprint(fn, out)
        rerun_ok = rerun == new_print if name != "collect" else rerun == 4
        rows.append({"command": name, "kill": i, "at_s": round(delay, 2), "killed": killed,
                     "first_write": first_write, "intact": bool(intact),
                     "rerun_ok": bool(rerun_ok),
                     "state": ("none" if after is None else "old" if after == before else
                               "new" if after == new_print else str(after)[:80])})
        print(f"{name} #{i}: kill at {delay:.1f}s -> {rows[-1]['state']}, rerun "
              f"{'ok' if rerun_ok else 'WRONG'}", flush=True)
    return {"rows": rows, "seconds": seconds}


SAVER = """
import sys
from gbxfer import load_dataset, train
from gbxfer.model import save_models
kind, small, out = sys.argv[1], load_dataset(sys.argv[2]), sys.argv[3]
if kind == "dataset-save":
    versions = [small.filter(hardware=small.hardware[:2]), small]
    save = lambda v, path: v.save(path)
else:  # a joint model and per-profile models, in turn
    config = {"params": {"n_estimators": 20, "num_leaves": 7}}
    versions = [{None: train(small, config)},
                {hw: train(small, config, target=hw) for hw in small.hardware[:3]}]
    save = lambda v, path: save_models(path, v)
save(versions[0], out + "-a")
save(versions[1], out + "-b")
print("ready", flush=True)
for i in range(10**6 if sys.argv[4] == "loop" else 1):
    save(versions[i % 2], out)
"""


def crash_saves(name: str, work: Path, kills: int, rng) -> dict:
    """kill -9 a process saving two versions in turn into one folder, at a random moment of
    its saves (the few milliseconds a command spends writing are where a kill matters)."""
    out = work / f"out-{name}"
    fn = dataset_print if name == "dataset-save" else model_print
    argv = [sys.executable, "-c", SAVER, name, str(work / "small"), str(out)]
    rows, seconds = [], 0.0
    for i in range(kills):
        for path in (out, Path(f"{out}-a"), Path(f"{out}-b")):
            shutil.rmtree(path, ignore_errors=True)
        proc = subprocess.Popen([*argv, "loop"], stdout=subprocess.PIPE, text=True,
                                start_new_session=True)
        proc.stdout.readline()  # "ready": both versions saved once, the loop starts
        delay = rng.uniform(0.0, 3.0)
        killed = kill_after([proc], delay)
        versions = (fingerprint(fn, Path(f"{out}-a")), fingerprint(fn, Path(f"{out}-b")))
        after = fingerprint(fn, out)
        start_time = time.monotonic()
        run([*argv, "once"])
        seconds = time.monotonic() - start_time
        rerun_ok = fingerprint(fn, out) == versions[0]
        rows.append({"command": name, "kill": i, "at_s": round(delay, 2), "killed": killed,
                     "first_write": False, "intact": after in (None, *versions),
                     "rerun_ok": rerun_ok,
                     "state": ("none" if after is None else "old" if after == versions[1]
                               else "new" if after == versions[0] else str(after)[:80])})
        print(f"{name} #{i}: kill at {delay:.2f}s -> {rows[-1]['state']}, rerun "
              f"{'ok' if rerun_ok else 'WRONG'}", flush=True)
    return {"rows": rows, "seconds": seconds}


def study_argv(work: Path, db: Path):
    return [*GBXFER, "study", "model", str(work / "small"), "--trials", "6", "--storage",
            f"sqlite:///{db}", "--study-name", "crash", "--config", str(work / "study.yaml"),
            "-q"]


def study_state(db: Path) -> dict:
    try:
        trials = optuna.load_study(study_name="crash", storage=f"sqlite:///{db}").trials
    except KeyError:  # killed before the study was created
        return {"complete": 0, "duplicates": 0, "running": 0}
    done = [tuple(sorted(t.params.items())) for t in trials if t.state == TrialState.COMPLETE]
    return {"complete": len(done), "duplicates": len(done) - len(set(done)),
            "running": sum(t.state in (TrialState.RUNNING, TrialState.WAITING) for t in trials)}


def crash_study(work: Path, kills: int, rng) -> dict:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    db = work / "study.db"
    db.unlink(missing_ok=True)
    start_time = time.monotonic()
    for p in start([study_argv(work, db)] * 3):
        p.wait()
    seconds = time.monotonic() - start_time
    reference = study_state(db)
    rows = []
    for i in range(kills):
        db.unlink(missing_ok=True)
        delay = rng.uniform(0.02, 1.0) * seconds
        killed = kill_after(start([study_argv(work, db)] * 3), delay)
        after = study_state(db) if db.exists() else {"complete": 0, "duplicates": 0}
        rerun_start = time.monotonic()
        logs = [work / f"study-worker-{w}.log" for w in range(3)]
        codes = [wait(p, 600) for p in start([study_argv(work, db)] * 3, logs)]
        errors = [log.read_text().strip().splitlines()[-1] for log, code in zip(logs, codes)
                  if code != 0 and log.read_text().strip()]
        final = study_state(db)
        rows.append({"command": "study", "kill": i, "at_s": round(delay, 2), "killed": killed,
                     "intact": after["complete"] <= 6 and after["duplicates"] == 0,
                     "rerun_ok": codes == [0, 0, 0] and final == {"complete": 6, "duplicates": 0,
                                                                  "running": 0},
                     "state": f"{after['complete']} done", "trials_completed": final["complete"],
                     "duplicates": final["duplicates"], "left_running": final["running"],
                     "worker_errors": errors,
                     "rerun_s": round(time.monotonic() - rerun_start, 1)})
        print(f"study #{i}: kill at {delay:.1f}s -> {after}, rerun {final} codes {codes}"
              f"{' ' + str(errors) if errors else ''}", flush=True)
    return {"rows": rows, "seconds": seconds, "reference": reference}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", help="comma-separated commands; their rows replace those "
                                       "of the same commands in the results already written")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    parser.add_argument("--name", default="crash_test",
                        help="results file name under scripts/results (default: crash_test)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="gbxfer-crash-"))
    prepare(work)
    rng = random.Random(args.seed)
    names = args.only.split(",") if args.only else [
        "ingest", "train", "train-per-target", "prune", "transfer", "study", "collect"]
    rows, seconds = [], {}
    commit = stamp()["commit"]
    for name, (old, new, fn) in commands(work, args.seed).items():
        if name in names:
            result = crash_command(name, old, new, fn, work, args.kills, rng)
            rows += result["rows"]
            seconds[name] = result["seconds"]
        if name == "transfer" and "study" in names:
            result = crash_study(work, args.kills, rng)
            rows += result["rows"]
            seconds["study"] = result["seconds"]
    for name in ("dataset-save", "model-save"):
        if name in names:
            result = crash_saves(name, work, args.kills, rng)
            rows += result["rows"]
            seconds[name] = result["seconds"]
    for row in rows:
        row["commit"] = commit
    if args.only and (RESULTS / f"{args.name}.json").exists():  # the other commands' runs
        kept = json.loads((RESULTS / f"{args.name}.json").read_text())
        rows = [r for r in kept["runs"] if r["command"] not in names] + rows
        seconds = {**{k: v for k, v in kept.get("full_run_s", {}).items()
                      if k not in names}, **seconds}
        names = list(dict.fromkeys([r["command"] for r in rows]))
    table = []
    for name in names:
        mine = [r for r in rows if r["command"] == name]
        if not mine:
            continue
        row = {"command": name, "full_run_s": round(seconds.get(name, float("nan")), 1), "runs": len(mine),
               "killed_midway": sum(r["killed"] for r in mine),
               "left_none": sum(r["state"] == "none" for r in mine),
               "left_old": sum(r["state"] == "old" for r in mine),
               "left_new": sum(r["state"] == "new" for r in mine),
               "intact_pct": 100.0 * sum(r["intact"] for r in mine) / len(mine),
               "rerun_ok_pct": 100.0 * sum(r["rerun_ok"] for r in mine) / len(mine)}
        if name == "study":
            row.update(trials_completed=sorted({r["trials_completed"] for r in mine}),
                       duplicate_params=sum(r["duplicates"] for r in mine),
                       left_running=sum(r["left_running"] for r in mine))
        table.append(row)
    print_table(table)
    write_results(args.name, table, kills=args.kills, seed=args.seed, full_run_s=seconds,
                  runs=rows)


if __name__ == "__main__":
    main()
