"""Writing benchmark results under scripts/results/, stamped with command, date, commit, machine."""
from __future__ import annotations

import csv
import datetime as dt
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def stamp() -> dict:
    """Where and how a result was measured."""
    repo = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(repo), "status", "--porcelain",
                                     "--untracked-files=no"],
                                    capture_output=True, text=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", False
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit + ("-dirty" if dirty else ""),
        "machine": {"host": platform.node(), "cpu": cpu, "cores": os.cpu_count(),
                    "python": platform.python_version(), "system": platform.platform()},
    }


def write_results(name: str, rows: list[dict], **extra) -> dict:
    """Write ``results/<name>.json`` (stamp + rows + extra) and ``results/<name>.csv`` (rows)."""
    RESULTS.mkdir(exist_ok=True)
    payload = {**stamp(), **extra, "rows": rows}
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=1, default=str) + "\n")
    if rows:
        columns = list(dict.fromkeys(k for row in rows for k in row))
        with open(RESULTS / f"{name}.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
    return payload


def tuned_layout(work) -> str:
    """The convolution layout (``gbxfer tune --layout``) of the runs in a bench_onnx model
    folder, from their summary.json (``as-is`` for runs from before the option); runs of two
    layouts in one folder stop the script."""
    layouts = {json.loads(path.read_text()).get("layout") or "as-is"
               for path in Path(work).glob("*/summary.json")}
    if len(layouts) > 1:
        raise SystemExit(f"{work}: runs tuned in different layouts ({', '.join(sorted(layouts))})")
    return layouts.pop() if layouts else "as-is"


def add_draw_log_options(parser, name: str) -> None:
    """``--name`` (results and log of finished draws) and ``--report-only``."""
    parser.add_argument("--name", default=name,
                        help="results file name (and of the log of finished draws)")
    parser.add_argument("--report-only", action="store_true",
                        help="summarize the logged draws, compute nothing new")


def logged_draws(name: str) -> dict:
    """The rows of ``results/<name>.jsonl`` by (setting, seed, k, data)."""
    log = RESULTS / f"{name}.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return {(r["setting"], r["seed"], r["k"], r["data"]): r for r in rows}


def log_draw(name: str, row: dict) -> None:
    """Append ``row`` to ``results/<name>.jsonl`` (a draw finished: a rerun skips it)."""
    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / f"{name}.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


def print_table(rows: list[dict], columns: list[str] | None = None) -> None:
    """The rows as a text table (floats to 4 significant digits), printed by pandas."""
    import pandas as pd

    columns = columns or list(dict.fromkeys(k for row in rows for k in row))
    frame = pd.DataFrame([{c: r.get(c, "") for c in columns} for r in rows], columns=columns)
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


def markdown_table(rows: list[dict], columns: list[str] | None = None) -> str:
    """The rows as a Markdown table (floats to 4 significant digits); written here because
    pandas' ``to_markdown`` needs the tabulate package."""
    columns = columns or list(dict.fromkeys(k for row in rows for k in row))

    def cell(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"
