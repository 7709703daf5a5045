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
    # the counts: >= 10,000 valid, >= 40 tasks, >= 4 profiles, >= 64 programs per
    # (task, profile) on average, at least half of the programs on every profile
    assert len(s["hardware"]) >= 4 and s["n_tasks"] >= 40 and s["n_valid"] >= 10_000
    assert s["n_records"] / (s["n_tasks"] * len(s["hardware"])) >= 64
    assert s["n_programs_on_every_hardware"] >= s["n_programs"] / 2
    assert all("gbxfer collect" in c["argv"] for c in ds.manifest["commands"])
    tasks = ds.tasks
    assert (tasks["flops"] > 0).all() and (tasks["network"] != "").all()


def test_bundled_latencies_are_valid_medians():
    import numpy as np

    r = gbxfer.load_bundled().records
    valid = r[r["valid"]]
    assert all(np.isclose(lat, np.median(c)) for lat, c in zip(valid["latency"][:200],
                                                                valid["costs"][:200]))
