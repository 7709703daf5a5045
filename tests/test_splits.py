"""Splits are deterministic functions of keys and seed, and keep programs on one side."""
from __future__ import annotations

import numpy as np
import pytest

from gbxfer import Dataset, GbxferError, SplitSpec
from gbxfer.splits import leave_one_network_out, paired_test_mask


@pytest.fixture(scope="module")
def gpus(ansor_dir):
    from gbxfer import ingest
    return ingest([ansor_dir / "gpu_a100", ansor_dir / "gpu_rtx3080"])


@pytest.mark.parametrize("kind", ["within-task", "by-task"])
def test_no_program_on_both_sides(gpus, kind):
    test = SplitSpec(kind, 0.3, seed=1).test_mask(gpus)
    programs = gpus.records["program_id"]
    assert not set(programs[test]) & set(programs[~test])
    assert 0 < test.sum() < len(test)


def test_same_seed_same_split_other_seed_other_split(gpus):
    a = SplitSpec("within-task", 0.3, seed=1).test_mask(gpus)
    assert np.array_equal(a, SplitSpec("within-task", 0.3, seed=1).test_mask(gpus))
    assert not np.array_equal(a, SplitSpec("within-task", 0.3, seed=2).test_mask(gpus))


def test_pruned_dataset_keeps_the_same_test_tasks(gpus):
    spec = SplitSpec("by-task", 0.3, seed=3)
    test = spec.test_mask(gpus)
    pruned = gpus.select(np.flatnonzero(np.arange(len(gpus)) % 3 == 0))
    pruned_test = spec.test_mask(pruned)
    assert set(pruned.records["task_key"][pruned_test]) <= set(gpus.records["task_key"][test])
    assert set(pruned.records["record_id"][pruned_test]) == set(
        gpus.records["record_id"][test]) & set(pruned.records["record_id"])


def test_by_task_holds_tasks_out_on_every_profile(gpus):
    test = SplitSpec("by-task", 0.5, seed=0).test_mask(gpus)
    tasks = gpus.records["task_key"]
    assert not set(tasks[test]) & set(tasks[~test])


def test_by_hardware_holds_out_a_family_and_reports_paired_programs(gpus):
    spec = SplitSpec.parse("by-hardware:cuda-sm_86")
    test = spec.test_mask(gpus)
    assert set(gpus.records["hardware_family"][test]) == {"cuda-sm_86"}
    paired = paired_test_mask(gpus, test)
    assert 0 < paired.sum() < test.sum()  # the README's cross-device pairs, and the rest


def test_by_hardware_unknown_family_lists_the_families(gpus):
    with pytest.raises(GbxferError, match="cuda-sm_80"):
        SplitSpec.parse("by-hardware:tpu").test_mask(gpus)


def test_by_network_needs_networks(gpus):
    with pytest.raises(GbxferError, match="network"):
        SplitSpec("by-network", 0.5).test_mask(gpus)


def test_by_network_holds_out_whole_networks(gpus):
    tasks = gpus.tasks.copy()
    tasks["network"] = ["net%d" % (i % 3) for i in range(len(tasks))]
    ds = Dataset(gpus.records, tasks)
    test = SplitSpec("by-network", 0.5, seed=4).test_mask(ds)
    network = ds.records["task_key"].map(dict(zip(tasks["task_key"], tasks["network"])))
    assert not set(network[test]) & set(network[~test])


def test_leave_one_network_out_holds_out_each_network_with_its_shared_tasks(gpus):
    tasks = gpus.tasks.copy()
    tasks["network"] = ["a,b" if i == 0 else "abc"[i % 3] for i in range(len(tasks))]
    ds = Dataset(gpus.records, tasks)
    masks = leave_one_network_out(ds)
    assert list(masks) == ["a", "b", "c"]
    shared = (ds.records["task_key"] == tasks["task_key"][0]).to_numpy()
    assert shared.any() and masks["a"][shared].all() and masks["b"][shared].all()
    assert not masks["c"][shared].any()
    assert np.logical_or.reduce(list(masks.values())).all()  # every task held out once or more
    with pytest.raises(GbxferError, match="network"):
        leave_one_network_out(gpus)


def test_spec_round_trips_through_a_dict():
    spec = SplitSpec.parse("by-hardware:llvm-znver3", 0.25, 7)
    assert SplitSpec.from_dict(spec.to_dict()) == spec


def test_bad_spec_is_a_clear_error():
    with pytest.raises(GbxferError, match="unknown split kind"):
        SplitSpec("by-moon")
    with pytest.raises(GbxferError, match="needs a family"):
        SplitSpec.parse("by-hardware")


def test_by_machine_holds_out_every_profile_of_one_machine(gpus):
    records = gpus.records.copy()
    # two profiles of one machine (an A100 at two clocks, say) and one of another
    records["machine"] = np.where(records["hardware_family"] == "cuda-sm_80", "NVIDIA A100",
                                  "NVIDIA RTX 3080")
    ds = Dataset(records, gpus.tasks)
    test = SplitSpec.parse("by-machine:NVIDIA A100").test_mask(ds)
    assert set(ds.records["machine"][test]) == {"NVIDIA A100"}
    assert set(ds.records["hardware"][test]) == set(
        ds.records.loc[ds.records["machine"] == "NVIDIA A100", "hardware"])
    assert 0 < paired_test_mask(ds, test).sum() < test.sum()


def test_by_machine_names_the_machines_there_are(gpus):
    with pytest.raises(GbxferError, match="no records of machine 'tpu'.*'cuda-sm_80'"):
        SplitSpec.parse("by-machine:tpu").test_mask(gpus)
    with pytest.raises(GbxferError, match="needs a machine: by-machine:MACHINE"):
        SplitSpec.parse("by-machine")
