"""The bundled dataset ships with the package, collected by gbxfer collect, paired profiles."""
from __future__ import annotations

import gbxfer
from gbxfer.cli import main


def test_bundled_loads_by_name_and_by_call(capsys):
    ds = gbxfer.load_bundled()
    assert len(ds) == len(gbxfer.load_dataset("bundled"))
    assert main(["info", "bundled", "--json"]) == 0
    assert '"n_programs_on_every_hardware"' in capsys.readouterr().out


def test_bundled_was_collected_by_gbxfer_collect_on_paired_profiles():
    ds = gbxfer.load_bundled()
    s = ds.summary()
    # the counts: >= 120 tasks, >= 64 programs per (task, profile) (a few small design
    # spaces have fewer), every program on every profile of its machine, >= 3 machines
    assert s["n_tasks"] >= 120 and len(s["hardware"]) >= 10 and len(ds.machines) >= 3
    sizes = ds.records.groupby(["task_key", "hardware"]).size()
    assert (sizes >= 64).mean() >= 0.95 and sizes.min() >= 32
    for machine, r in ds.records.groupby("machine"):
        programs = r.groupby("hardware")["program_id"].apply(frozenset)
        assert programs.nunique() == 1, machine
    collect = " ".join(c["argv"] for c in ds.manifest["commands"] if "gbxfer collect" in c["argv"])
    assert all(f"{profile}.yaml" in collect for profile in s["hardware"])
    tasks = ds.tasks
    assert (tasks["flops"] > 0).all() and (tasks["network"] != "").all()


def test_bundled_latencies_are_valid_medians():
    import numpy as np

    r = gbxfer.load_bundled().records
    valid = r[r["valid"]]
    assert all(np.isclose(lat, np.median(c)) for lat, c in zip(valid["latency"][:200],
                                                                valid["costs"][:200]))
