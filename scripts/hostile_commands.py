"""The hostile and careless commands of the reliability issue, re-run: each must give the right
result (a new model used, distinct study trials) or one error line and a non-zero exit status,
with no traceback and nothing written outside its output.

``small`` is ``gbxfer prune bundled --keep 0.1 --method random``, ``E`` the example MetaSchedule
database. Kills (items 2 and 4 after a kill) are scripts/crash_test.py's. Prints a table and
writes scripts/results/hostile_commands.{json,csv}.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import print_table, write_results  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
E = REPO / "gbxfer" / "data" / "example-metaschedule"
GBXFER = [sys.executable, "-m", "gbxfer"]


def listing(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


def gbxfer(work: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([*GBXFER, *map(str, args)], cwd=work, capture_output=True, text=True,
                          timeout=900)


def setup(work: Path, *args) -> None:
    """A command that prepares the case and must succeed."""
    result = gbxfer(work, *args)
    if result.returncode != 0:
        raise SystemExit(f"setup failed: gbxfer {' '.join(map(str, args))}: {result.stderr}")


def python(work: Path, code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True,
                          text=True, timeout=900)


def check_error(item, what, work, run, outputs=()) -> dict:
    """Row of a command that must fail with one error line and write nothing but ``outputs``."""
    before = listing(work)
    result = run()
    written = {p for p in listing(work) - before
               if not any(p == o or p.startswith(o + "/") for o in outputs)}
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    error_lines = [line for line in lines if "error" in line.lower()]
    ok = (result.returncode != 0 and "Traceback" not in result.stderr and len(error_lines) == 1
          and not written)
    return {"item": item, "what": what, "exit": result.returncode,
            "message": (error_lines or lines or [""])[-1][:110],
            "written_outside": len(written), "ok": ok}


def check_result(item, what, run, verify) -> dict:
    result = run()
    detail = verify(result) if result.returncode == 0 else result.stderr.strip()[-110:]
    ok = result.returncode == 0 and detail is True
    return {"item": item, "what": what, "exit": result.returncode,
            "message": "right result" if ok else str(detail)[:110], "written_outside": 0,
            "ok": ok}


def edited_database(work: Path, name: str, edit) -> Path:
    """A copy of E whose first tuning record is changed by ``edit(record)``."""
    out = work / name
    shutil.copytree(E, out)
    path = out / "database_tuning_record.json"
    lines = path.read_text().splitlines()
    record = json.loads(lines[0])
    edit(record)
    lines[0] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    return out


def models_of(path: Path):
    code = (f"from gbxfer.model import load_models; print(sorted(map(str, "
            f"load_models({str(path)!r}))))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="gbxfer-hostile-"))
    small = work / "small"
    setup(work, "prune", "bundled", "--keep", "0.1", "--method", "random", "--out", small, "-q")
    rows = []

    # 1: a joint model trained over per-target models is the one used
    setup(work, "train", small, "--per-target", "--out", "M", "-q")
    rows.append(check_result(
        1, "train --per-target, then train --holdout by-task into the same M",
        lambda: gbxfer(work, "train", small, "--holdout", "by-task", "--test-fraction", "0.3",
                       "--out", "M", "-q"),
        lambda _: models_of(work / "M").strip() == "['None']" or models_of(work / "M")))
    rows.append(check_result(
        1, "evaluate M scores the joint model's by-task test part (13 of 44 tasks)",
        lambda: gbxfer(work, "evaluate", "M", small, "--json", "-q"),
        lambda r: json.loads(r.stdout)["n_tasks"] < 20 or r.stdout[:100]))

    # 3: hardware names from data never become paths
    evil = edited_database(work, "E-evil", lambda r: r[1][2].update(mcpu="../../../evil"))
    rows.append(check_error(3, 'ingest a record whose target says "mcpu": "../../../evil"', work,
                            lambda: gbxfer(work, "ingest", evil, "--out", "D3", "-q")))
    rows.append(check_error(3, "ingest --hardware /abs/evil", work,
                            lambda: gbxfer(work, "ingest", E, "--hardware", "/tmp/abs-evil",
                                           "--out", "D3b", "-q")))

    # 4: two workers on one storage run distinct trials within the budget
    db = f"sqlite:///{work / 'study.db'}"
    common = [*GBXFER, "study", "model", str(small), "--trials", "2", "--storage", db, "-q"]
    procs = [subprocess.Popen(common, cwd=work, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    codes = [p.wait() for p in procs]
    verify = ("import optuna; s = optuna.load_study(study_name='gbxfer', storage=%r); "
              "d = [tuple(sorted(t.params.items())) for t in s.trials if t.state.name == "
              "'COMPLETE']; print(len(d), len(set(d)), sum(t.state.name == 'RUNNING' for t in "
              "s.trials))" % db)
    state = python(work, verify).stdout.split()
    rows.append({"item": 4, "what": "two study workers, --trials 2, one SQLite storage",
                 "exit": max(codes), "message": f"complete {state[0]}, distinct {state[1]}, "
                 f"running {state[2]}", "written_outside": 0,
                 "ok": codes == [0, 0] and state == ["2", "2", "0"]})

    # 5: bad MetaSchedule records with and without --skip-bad
    for what, edit in (("args_info shape an int", lambda r: r[1][3][0].__setitem__(2, 7)),
                       ("trace attribute not a list",
                        lambda r: r[1][0][0][0].__setitem__(2, 5))):
        bad = edited_database(work, f"E-{len(rows)}", edit)
        rows.append(check_error(5, f"ingest a record with {what}", work,
                                lambda: gbxfer(work, "ingest", bad, "--out", "D5", "-q")))
        rows.append(check_result(5, f"ingest --skip-bad a record with {what}",
                                 lambda: gbxfer(work, "ingest", bad, "--skip-bad", "--out",
                                                f"D5-{len(rows)}", "-q"),
                                 lambda r: "skipped" in r.stderr + r.stdout or r.stderr))

    # 6: a truncated booster
    (work / "lightgbm.yaml").write_text("params: {backend: lightgbm, objective: lambdarank}\n")
    for config, booster_file in (("lightgbm.yaml", "booster.txt"), (None, "booster.json")):
        setup(work, "train", small, "--out", f"M6-{booster_file}", "-q",
              *(["--config", work / config] if config else []))
        booster = next((work / f"M6-{booster_file}").rglob(booster_file))
        booster.write_bytes(booster.read_bytes()[:booster.stat().st_size // 2])
        rows.append(check_error(6, f"evaluate with a truncated {booster_file}", work,
                                lambda: gbxfer(work, "evaluate", f"M6-{booster_file}", small)))

    # 7: silent corruption
    shutil.copytree(small, work / "D7")
    table = next((work / "D7").glob("records-*.parquet"))
    data = bytearray(table.read_bytes())
    data[len(data) // 2] ^= 0x01
    table.write_bytes(data)
    rows.append(check_error(7, "info on a dataset with one flipped bit", work,
                            lambda: gbxfer(work, "info", "D7")))
    rows.append(check_error(7, "edit a valid record's latency to -1 in Python and save", work,
                            lambda: python(work, (
                                "import gbxfer, numpy as np, sys\n"
                                f"d = gbxfer.load_dataset({str(small)!r})\n"
                                "d.records.loc[np.flatnonzero(d.records['valid'])[0], "
                                "'latency'] = -1\n"
                                "try:\n    d.save('D7b')\n"
                                "except gbxfer.errors.GbxferError as e:\n"
                                "    sys.exit(f'error: {e}')\n"))))
    shutil.copytree(small, work / "D7c")
    manifest = json.loads((work / "D7c" / "manifest.json").read_text())
    manifest["tables"] = {"records": 3}
    (work / "D7c" / "manifest.json").write_text(json.dumps(manifest))
    rows.append(check_error(7, "info on a dataset whose manifest key is corrupted", work,
                            lambda: gbxfer(work, "info", "D7c")))
    shutil.copytree(small, work / "D7d")
    next((work / "D7d").glob("tasks-*.parquet")).unlink()
    rows.append(check_error(7, "info on a dataset missing a Parquet file", work,
                            lambda: gbxfer(work, "info", "D7d")))
    setup(work, "train", small, "--out", "M7", "-q")
    meta = next((work / "M7").rglob("model.json"))
    meta.write_text(meta.read_text()[:200])
    rows.append(check_error(7, "evaluate with a truncated model.json", work,
                            lambda: gbxfer(work, "evaluate", "M7", small)))

    # 8: command-line arguments
    setup(work, "train", small, "--target", "x86-avx2-1t", "--out", "S", "-q")
    for shots in ("0", "-2", "nan", "inf", "1.5"):
        rows.append(check_error(8, f"transfer --shots {shots}", work, lambda: gbxfer(
            work, "transfer", "S", "--target-data", small, "--shots", shots, "--out", "T")))
    rows.append(check_error(8, "transfer --tune -1", work, lambda: gbxfer(
        work, "transfer", "S", "--target-data", small, "--shots", "2", "--tune", "-1",
        "--out", "T")))
    rows.append(check_error(8, "explain --top -3", work,
                            lambda: gbxfer(work, "explain", "S", "--top", "-3")))
    rows.append(check_error(8, "ingest --hardware ':fam'", work,
                            lambda: gbxfer(work, "ingest", E, "--hardware", ":fam", "--out",
                                           "D8")))
    (work / "afile").write_text("mine")
    rows.append(check_error(8, "train --out onto an existing file", work,
                            lambda: gbxfer(work, "train", small, "--out", "afile")))
    rows.append(check_error(8, "study --storage not-a-url", work, lambda: gbxfer(
        work, "study", "model", small, "--storage", "not-a-url", "--trials", "1")))
    rows.append(check_result(8, "predict --out into a missing folder (created)",
                             lambda: gbxfer(work, "predict", "S", small, "--out",
                                            "new/x.csv", "-q"),
                             lambda _: (work / "new" / "x.csv").is_file()))

    # 9: smaller
    rows.append(check_result(9, 'gbxfer.ingest("dir") with one string',
                             lambda: python(work, f"import gbxfer; print(len(gbxfer.ingest("
                                                  f"{str(E)!r})))"),
                             lambda r: int(r.stdout) > 0 or r.stdout))
    for target in (42, {"mcpu": "x"}):
        bad = edited_database(work, f"E9-{len(rows)}",
                              lambda r, t=target: r[1].__setitem__(2, t))
        rows.append(check_error(9, f"ingest a record whose target is {json.dumps(target)}", work,
                                lambda: gbxfer(work, "ingest", bad, "--out", "D9")))
    (work / "mine").mkdir()
    (work / "mine" / "notes.txt").write_text("mine")
    rows.append(check_error(9, "ingest --out a folder holding the user's files", work,
                            lambda: gbxfer(work, "ingest", E, "--out", "mine")))
    rows[-1]["ok"] &= (work / "mine" / "notes.txt").read_text() == "mine"
    only = gbxfer_dataset(work, small, "x86-sse42-1t")
    rows.append(check_error(9, "evaluate a joint model on a dataset with none of its hardware",
                            work, lambda: gbxfer(work, "evaluate", "S", only)))
    print_table(rows)
    print(f"{sum(r['ok'] for r in rows)} of {len(rows)} as required")
    write_results("hostile_commands", rows)
    shutil.rmtree(work, ignore_errors=True)


def gbxfer_dataset(work: Path, small: Path, profile: str) -> Path:
    """``small`` with only ``profile``'s records."""
    out = work / f"only-{profile}"
    python(work, f"import gbxfer; gbxfer.load_dataset({str(small)!r}).filter(hardware="
                 f"{profile!r}).save({str(out)!r})")
    return out


if __name__ == "__main__":
    main()
