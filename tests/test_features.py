"""Joint features on real records: every source featurizes; programs and hardware show."""
from __future__ import annotations

import numpy as np
import pytest

from gbxfer import Dataset, GbxferError, ingest
from gbxfer.features import build
from gbxfer.features._program import COLUMNS, ProgramFeaturizer


def _distinct_share_within_tasks(fm):
    program = fm.select_blocks(["program"])
    first = program.records.drop_duplicates("program_id").index
    rows = program.X[first]
    tasks = program.records.loc[first, "task_key"].to_numpy()
    shares = []
    for task in np.unique(tasks):
        X = rows[tasks == task]
        shares.append(len(np.unique(X, axis=0)) / len(X))
    return min(shares), np.mean(shares)


def test_older_metaschedule_database_featurizes_and_separates_programs(ms_a100_dataset):
    fm = build(ms_a100_dataset)
    assert fm.X.shape == (len(ms_a100_dataset), len(fm.columns))
    assert not np.isnan(fm.select_blocks(["program"]).X).any()
    worst, mean = _distinct_share_within_tasks(fm)
    assert mean > 0.999 and worst > 0.99


def test_ansor_logs_featurize_and_separate_programs(ansor_dir):
    fm = build(ingest([ansor_dir]))
    assert not np.isnan(fm.select_blocks(["program"]).X).any()
    worst, mean = _distinct_share_within_tasks(fm)
    assert mean > 0.99


def test_tvm027_database_featurizes(example_db):
    fm = build(ingest([example_db]))
    X = fm.select_blocks(["program"]).X
    assert len(np.unique(X, axis=0)) == len(X)
    tiles = [fm.columns.index(f"program.sp_level{i}_log2") for i in range(4)]
    # a 128x128 output split into 4 tile levels on both axes: log2 factors sum to 7 + 7
    assert np.allclose(X[:, [i for i in range(len(fm.columns))
                             if fm.columns[i] in [fm.columns[t] for t in tiles]]].sum(1), 14)


def test_same_program_on_two_profiles_differs_only_in_hardware(ansor_dir):
    ds = ingest([ansor_dir / "gpu_a100", ansor_dir / "gpu_rtx3080"])
    fm = build(ds)
    r = fm.records
    both = r.groupby("program_id")["hardware"].nunique()
    pid = both[both == 2].index[0]
    a, b = np.flatnonzero(r["program_id"] == pid)[:2]
    differ = {fm.columns[i].split(".")[0] for i in np.flatnonzero(
        ~np.isclose(fm.X[a], fm.X[b], equal_nan=True))}
    assert differ == {"hardware"}


def test_labels_are_normalised_throughput_within_groups(ansor_a100_dataset):
    fm = build(ansor_a100_dataset, blocks=["workload"])
    r = fm.records
    valid = r[r["valid"]]
    assert np.isclose(valid.groupby("group")["label"].max(), 1.0).all()
    assert (r.loc[~r["valid"], "label"] == 0).all()
    assert ((valid["label"] > 0) & (valid["label"] <= 1)).all()


def test_selected_rows_are_relabelled_among_themselves(ansor_a100_dataset):
    fm = build(ansor_a100_dataset, blocks=["workload"])
    valid = fm.records["valid"].to_numpy()
    slow_half = valid & (fm.records["label"].to_numpy() < 0.5)
    sub = fm.select_rows(slow_half)
    assert np.allclose(sub.records.groupby("group")["label"].max(), 1.0)
    assert np.array_equal(sub.X, fm.X[slow_half], equal_nan=True)
    assert np.array_equal(build(ansor_a100_dataset.select(slow_half), ["workload"]).records[
        "label"], sub.records["label"])


def test_blocks_are_selected_in_the_order_asked(ansor_a100_dataset):
    fm = build(ansor_a100_dataset, blocks=["workload", "hardware"])
    assert fm.select_blocks(["hardware", "workload"]).columns == (
        fm.block_columns("hardware") + fm.block_columns("workload"))
    with pytest.raises(GbxferError, match="no 'program' block"):
        fm.select_blocks(["program"])


def test_unknown_primitive_is_counted_not_fatal():
    f = ProgramFeaturizer()
    vec = f.ansor([["XYZ", 1, 2], ["SP", 2, 0, 64, [4, 4], 1]])
    assert vec[COLUMNS.index("count_other")] == 1
    assert vec[COLUMNS.index("count_split")] == 1


def _pooling_trace(rfactor_loop: str, locations: tuple) -> list:
    """A max-pooling sketch: the window's loop split in two, one part rfactor-ed, the
    padding's and the rfactor block's compute locations sampled."""
    insts = [["GetSBlock", [], ["pad_temp", "main"], ["b0"]],
             ["GetSBlock", [], ["pool_max", "main"], ["b1"]],
             ["GetLoops", ["b1"], [], ["l3", "l4"]],
             ["SamplePerfectTile", ["l4"], [2, 64], ["v5", "v6"]],
             ["Split", ["l4", "v5", "v6"], [True, False], ["l7", "l8"]],
             ["RFactor", [rfactor_loop], [4], ["b9"]],
             ["SampleComputeLocation", ["b0"], [], ["l10"]],
             ["ComputeAt", ["b0", "l10"], [1, -1], []],
             ["SampleComputeLocation", ["b9"], [], ["l11"]],
             ["ComputeAt", ["b9", "l11"], [1, -1], []],
             ["EnterPostproc", [], [], []]]
    return [insts, [[3, [2, 8]], [6, locations[0]], [8, locations[1]]]]


def test_compute_locations_and_rfactor_are_read_from_the_decisions():
    f = ProgramFeaturizer()
    inner, outer = f.transform_traces([_pooling_trace("l8", (-2, 1)),
                                       _pooling_trace("l7", (-1, -1))])
    col = {c: i for i, c in enumerate(COLUMNS)}

    def get(vec, *names):
        return [float(vec[col[n]]) for n in names]

    # the window's inner part (8 iterations) rfactor-ed; padding inlined, rfactor under loop 1
    assert get(inner, "rfactor_inner", "rfactor_outer", "rfactor_extent_log2") == [1, 0, 3]
    assert get(inner, "location_inline", "location_root", "location_loop") == [1, 0, 1]
    assert get(inner, "location0", "location1", "location2") == [1, 4, 0]
    # the outer part (2 iterations) rfactor-ed; both blocks at the root
    assert get(outer, "rfactor_inner", "rfactor_outer", "rfactor_extent_log2") == [0, 1, 1]
    assert get(outer, "location_inline", "location_root", "location_loop") == [0, 2, 0]
    assert get(outer, "location0", "location1") == [2, 2]
    # Ansor's compute steps count in the same location columns
    steps = f.ansor([["CI", 1], ["CR", 2], ["CA", 3, 1, 2]])
    assert get(steps, "location_inline", "location_root", "location_loop") == [1, 1, 1]


def test_unknown_block_is_an_error(ansor_a100_dataset):
    from gbxfer import GbxferError
    with pytest.raises(GbxferError, match="unknown feature block"):
        build(ansor_a100_dataset, blocks=["vibes"])


def test_workload_block_reads_shapes_and_marks_unknown_flops_nan(ms_a100_dataset):
    fm = build(ms_a100_dataset, blocks=["workload"])
    X = fm.X
    col = fm.columns.index
    ops = [i for i, c in enumerate(fm.columns) if c.startswith("workload.op_")]
    assert (X[:, ops].sum(1) == 1).all()  # one operator kind each
    assert X[:, col("workload.op_conv2d")].sum() > 0 and X[:, col("workload.op_softmax")].sum() > 0
    assert np.isnan(X[:, col("workload.log2_flops")]).all()  # foreign tasks: FLOPs unknown
    assert (X[:, col("workload.log2_bytes")] > 0).all()


def test_empty_dataset_builds_an_empty_matrix():
    fm = build(Dataset())
    assert fm.X.shape[0] == 0


def test_text_fast_path_equals_parsing_the_whole_trace(ms_a100_dataset, example_db):
    import orjson

    for ds in (ms_a100_dataset, ingest([example_db])):
        texts = ds.records.drop_duplicates("program_id")["program"].head(400)
        parsed, fast = ProgramFeaturizer(), ProgramFeaturizer()
        a = np.array([parsed.metaschedule(orjson.loads(t)) for t in texts])
        b = np.array([fast.metaschedule_text(t) for t in texts])
        assert np.array_equal(a, b)
        # batched, live (trace lists) and with the caches dropped between batches: the same
        batched = ProgramFeaturizer(max_parts=50)
        c = np.vstack([batched.transform(["metaschedule"] * 100, list(texts[i:i + 100]))
                       for i in range(0, len(texts), 100)])
        d = ProgramFeaturizer().transform_traces([orjson.loads(t) for t in texts])
        assert np.array_equal(a, c) and np.array_equal(a, d)
        assert len(batched._parts) <= 50  # dropped after a batch, not grown without bound


def test_ansor_text_path_equals_parsing_and_fills_the_by_axis_tiles(ansor_a100_dataset):
    import orjson

    texts = ansor_a100_dataset.records.drop_duplicates("program_id")["program"].head(400)
    parsed, fast = ProgramFeaturizer(), ProgramFeaturizer()
    a = np.array([parsed.ansor(orjson.loads(t)) for t in texts])
    b = np.array([fast.ansor_text(t) for t in texts])
    assert np.array_equal(a, b)
    by_axis = [COLUMNS.index(f"sp_axis{i}_level1_log2") for i in range(2)]
    assert (b[:, by_axis] > 0).any(axis=0).all()  # GPU matmul tiles: spatial axes filled


def test_program_features_from_two_processes_are_the_same_bit_for_bit():
    import numpy as np

    from gbxfer import load_dataset
    from gbxfer.features import build

    part = load_dataset("bundled").filter(hardware="x86-avx2-1t")
    one = build(part, ["program", "workload"])
    two = build(part, ["program", "workload"], n_jobs=2)
    assert one.columns == two.columns and np.array_equal(one.X, two.X, equal_nan=True)


def test_cross_block_is_the_program_against_its_hardware():
    """The cross block of the bundled data: finite where every descriptor field is known,
    computed from the other blocks' columns, and the same matrix alone or beside them."""
    from gbxfer import load_bundled

    bundled = load_bundled()
    sample = bundled.select(bundled.records["task_key"].isin(
        bundled.tasks["task_key"].tolist()[:3]).to_numpy())
    full = build(sample, ["program", "workload", "hardware", "cross"])
    alone = build(sample, ["cross"])
    cross = full.X[:, [full.columns.index(c) for c in alone.columns]]
    assert alone.columns == [f"cross.{c}" for c in
                             ("vector_over_lanes", "parallel_over_threads", "l1_tile_over_l1d",
                              "l2_tile_over_l2", "ideal_time", "outer_iterations",
                              "register_tile", "inner_tile_over_lanes")]
    assert np.array_equal(cross, alone.X) and np.isfinite(cross).all()

    def col(name):
        return full.X[:, full.columns.index(name)].astype(float)

    lanes = np.log2(1 + col("hardware.vector_bits") / 32)
    assert np.allclose(col("cross.vector_over_lanes"), col("program.vectorize_log2") - lanes,
                       atol=1e-5)
    assert len(np.unique(col("cross.vector_over_lanes"))) > 1


def test_workload_of_scalar_arguments_has_no_missing_dims():
    """A task whose arguments are all scalars (an ONNX model's 0-d input): no dims, log2 0."""
    import json

    from gbxfer.features._workload import COLUMNS, workload_vector

    vec = workload_vector("add", json.dumps([["float32", []], ["float32", []]]), 1.0)
    col = {c: i for i, c in enumerate(COLUMNS)}
    assert vec[col["max_dim_log2"]] == vec[col["min_dim_log2"]] == 0.0
