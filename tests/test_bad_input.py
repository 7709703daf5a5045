"""Bad input gives an error naming the file and line, writes nothing; --skip-bad reads the rest."""
from __future__ import annotations

import gzip
import json

import pytest

from gbxfer import InputError, ingest
from gbxfer.cli import main


def _log(tmp_path, lines: list[bytes], name="log.json"):
    path = tmp_path / name
    path.write_bytes(b"".join(line.rstrip(b"\n") + b"\n" for line in lines))
    return path


def _expect_error(path, line, reason, source=None):
    with pytest.raises(InputError) as info:
        ingest([source or path])
    assert info.value.path == str(path)
    assert info.value.line == line
    assert info.value.reason == reason
    assert str(path) in str(info.value)
    return info.value


def test_truncated_line(ansor_lines, tmp_path):
    path = _log(tmp_path, [ansor_lines[0], ansor_lines[1][:100]])
    _expect_error(path, 2, "malformed-json")


def test_malformed_line(ansor_lines, tmp_path):
    path = _log(tmp_path, [b"{not json", ansor_lines[0]])
    _expect_error(path, 1, "malformed-json")


def test_wrong_types(ansor_lines, tmp_path):
    record = json.loads(ansor_lines[0])
    record["r"][1] = "zero"
    path = _log(tmp_path, [ansor_lines[0], json.dumps(record).encode()])
    error = _expect_error(path, 2, "bad-structure")
    assert "error_no" in error.message


@pytest.mark.parametrize("cost", [b"NaN", b"-0.5", b"Infinity", b"1e999", b"0"])
def test_nan_negative_infinite_and_zero_costs(ansor_lines, tmp_path, cost):
    text = ansor_lines[0].decode()
    record = json.loads(text)
    original = json.dumps(record["r"][0])
    bad = text.replace(original.replace(" ", ""), "[" + cost.decode() + "]", 1)
    if bad == text:  # costs written with spaces
        bad = text.replace(original, "[" + cost.decode() + "]", 1)
    assert bad != text
    path = _log(tmp_path, [ansor_lines[1], bad.encode()])
    # NaN, Infinity and out-of-range numbers are not JSON; the others parse but are bad costs
    reason = "malformed-json" if cost in (b"NaN", b"Infinity", b"1e999") else "bad-cost"
    _expect_error(path, 2, reason)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.json"
    path.write_bytes(b"")
    _expect_error(path, None, "empty-file")


def test_empty_gzip_file(tmp_path):
    path = tmp_path / "empty.json.gz"
    with gzip.open(path, "wb"):
        pass
    _expect_error(path, None, "empty-file")


@pytest.mark.parametrize("platforms", [[], ["cpu-a"], ["cpu-a", "cpu-b"]])
def test_tenset_tree_without_logs_is_an_error_not_an_empty_dataset(tmp_path, platforms):
    tree = tmp_path / "measure_records"
    tree.mkdir()
    for name in platforms:
        (tree / name).mkdir()
        (tree / name / "notes.txt").write_text("not a log")
    error = _expect_error(tree, None, "no-data", tmp_path)
    assert ("no platform folders" if not platforms else "no Ansor/TenSet log") in str(error)


def test_truncated_gzip_file(ansor_dir, tmp_path):
    data = (ansor_dir / "gpu_rtx3080" / "ansor_matmul.json.gz").read_bytes()
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 2])
    _expect_error(path, None, "truncated-file")


def test_non_utf8_byte(ansor_lines, tmp_path):
    bad = ansor_lines[0].replace(b"SP", b"S\xff", 1)
    path = _log(tmp_path, [ansor_lines[1], ansor_lines[2], bad])
    error = _expect_error(path, 3, "not-utf8")
    assert "0xff" in error.message


@pytest.mark.parametrize("missing", ["database_workload.json", "database_tuning_record.json"])
def test_metaschedule_folder_missing_a_file(example_db, tmp_path, missing):
    folder = tmp_path / "db"
    folder.mkdir()
    for name in ("database_workload.json", "database_tuning_record.json"):
        if name != missing:
            (folder / name).write_bytes((example_db / name).read_bytes())
    error = _expect_error(folder, None, "missing-file")
    assert missing in error.message


def test_metaschedule_record_with_unknown_workload(example_db, tmp_path):
    folder = tmp_path / "db"
    folder.mkdir()
    (folder / "database_workload.json").write_bytes(
        (example_db / "database_workload.json").read_bytes())
    lines = (example_db / "database_tuning_record.json").read_bytes().splitlines()
    record = json.loads(lines[1])
    record[0] = 7
    lines[1] = json.dumps(record).encode()
    (folder / "database_tuning_record.json").write_bytes(b"\n".join(lines) + b"\n")
    error = _expect_error(folder / "database_tuning_record.json", 2, "unknown-workload", folder)
    assert "workload index 7" in error.message


def test_cli_error_names_file_and_line_and_writes_nothing(ansor_lines, tmp_path, capsys):
    path = _log(tmp_path, [ansor_lines[0], ansor_lines[1][:50]])
    out = tmp_path / "out"
    assert main(["ingest", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2:" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_skip_bad_ingests_the_rest_and_counts_reasons(ansor_lines, tmp_path, capsys):
    text = ansor_lines[3].decode()
    path = _log(tmp_path, [ansor_lines[0], b"{oops", ansor_lines[1], b"\xff\xfe",
                           text.replace(json.dumps(json.loads(text)["r"][0]), "[-1]").encode(),
                           ansor_lines[2]])
    out = tmp_path / "out"
    assert main(["ingest", str(path), "--out", str(out), "--skip-bad"]) == 0
    err = capsys.readouterr().err
    assert "skipped 3 bad lines" in err
    assert main(["info", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["n_records"] == 3
    assert info["skipped_lines"] == {"malformed-json": 1, "not-utf8": 1, "bad-cost": 1}


def test_skip_bad_with_nothing_left_writes_nothing(ansor_lines, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["ingest", str(_log(tmp_path, ansor_lines[:2])), "--out", str(out)]) == 0
    before = sorted(p.name for p in out.iterdir())
    tree = tmp_path / "measure_records"
    (tree / "cpu-a").mkdir(parents=True)
    (tree / "cpu-a" / "folder.json").mkdir()  # a folder named like a log is not one
    assert main(["ingest", str(tree), "--out", str(out), "--skip-bad"]) == 2
    err = capsys.readouterr().err
    assert "no record read" in err and "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == before  # the earlier dataset stands
    assert main(["info", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_records"] == 2
    _log(tree / "cpu-a", ansor_lines[:3], "good.json")  # beside it, the folder is not read
    (tree / "cpu-a" / ".ipynb_checkpoints").mkdir()
    _log(tree / "cpu-a" / ".ipynb_checkpoints", ansor_lines[:3], "good.json")  # nor a hidden copy
    assert ingest([tree]).summary()["n_lines"] == 3  # (a copy would merge, its lines count)


def test_skip_bad_skips_an_empty_file_among_good_ones(ansor_lines, tmp_path):
    good = _log(tmp_path, ansor_lines[:4], "good.json")
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"\n\n")
    ds = ingest([good, empty], skip_bad=True)
    assert len(ds) == 4
    assert ds.manifest["skipped"] == {"empty-file": 1}


# --- hostile values inside well-formed JSON: each one an InputError, skippable with skip_bad

def _ms_copy(example_db, tmp_path, record=None, workload=None):
    """A copy of the example database whose record line 2 (or workload line 1) is ``record``
    (``workload``), edited from the original by a function of its parsed JSON."""
    folder = tmp_path / "db"
    folder.mkdir()
    workloads = (example_db / "database_workload.json").read_bytes().splitlines()
    records = (example_db / "database_tuning_record.json").read_bytes().splitlines()
    for lines, edit, i in ((records, record, 1), (workloads, workload, 0)):
        if edit is not None:
            value = json.loads(lines[i])
            edit(value)
            lines[i] = json.dumps(value).encode()
    (folder / "database_workload.json").write_bytes(b"\n".join(workloads) + b"\n")
    (folder / "database_tuning_record.json").write_bytes(b"\n".join(records) + b"\n")
    return folder


def _expect_ms_record_error(folder, reason):
    error = _expect_error(folder / "database_tuning_record.json", 2, reason, folder)
    ds = ingest([folder], skip_bad=True)
    assert ds.manifest["skipped"] == {reason: 1}
    assert len(ds) > 0
    return error


def _set(*path_and_value):
    *path, value = path_and_value

    def edit(node):
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return edit


def test_metaschedule_shape_that_is_an_int_is_bad_shape(example_db, tmp_path):
    folder = _ms_copy(example_db, tmp_path, record=_set(1, 3, 0, 2, 128))
    error = _expect_ms_record_error(folder, "bad-shape")
    assert "list of positive integers" in error.message


@pytest.mark.parametrize("shape", [[0, 128], [-1, 128], [1.5, 128], [True, 128], [[128]]])
def test_metaschedule_shape_with_a_dimension_that_is_not_a_positive_int_is_bad_shape(
        example_db, tmp_path, shape):
    _expect_ms_record_error(_ms_copy(example_db, tmp_path, record=_set(1, 3, 1, 2, shape)),
                            "bad-shape")


@pytest.mark.parametrize("args_info", [7, [["TENSOR", "float32"]], [["BUFFER", "float32", [1]]],
                                       [["TENSOR", "llvm", [1]]], {"TENSOR": [1]}])
def test_metaschedule_args_info_that_is_not_a_list_of_tensors_is_bad_structure(
        example_db, tmp_path, args_info):
    _expect_ms_record_error(_ms_copy(example_db, tmp_path, record=_set(1, 3, args_info)),
                            "bad-structure")


@pytest.mark.parametrize("attrs", [7, {"a": 1}, "matmul", None])
def test_metaschedule_trace_attribute_that_is_not_a_list_is_bad_structure(example_db, tmp_path,
                                                                          attrs):
    folder = _ms_copy(example_db, tmp_path, record=_set(1, 0, 0, 0, 2, attrs))
    error = _expect_ms_record_error(folder, "bad-structure")
    assert "trace instruction 0" in error.message


@pytest.mark.parametrize("decision", [[999, 1], [-1, 1], ["4", 1], [4], 4])
def test_metaschedule_decision_of_no_instruction_is_bad_structure(example_db, tmp_path, decision):
    _expect_ms_record_error(_ms_copy(example_db, tmp_path, record=_set(1, 0, 1, 0, decision)),
                            "bad-structure")


@pytest.mark.parametrize("run_secs", [[-1.0], [0], [1e-5, 0.0], ["1e-5"], [], 1e-5])
def test_metaschedule_run_secs_not_positive_seconds_are_bad_cost(example_db, tmp_path, run_secs):
    _expect_ms_record_error(_ms_copy(example_db, tmp_path, record=_set(1, 1, run_secs)),
                            "bad-cost")


def test_metaschedule_failure_marker_stays_a_failed_record(example_db, tmp_path):
    ds = ingest([_ms_copy(example_db, tmp_path, record=_set(1, 1, [1e10]))])
    failed = ds.records[ds.records["line"] == 2].iloc[0]
    assert not failed["valid"] and failed["error"] == "build-or-run-failed"
    assert list(failed["costs"]) == []


@pytest.mark.parametrize("target", [42, {"arch": "sm_80"}, {"kind": 1}, {"kind": ""},
                                    "llvm -mcpu=znver3", [{"kind": "llvm"}],
                                    {"kind": "llvm", "mcpu": 3}, {"kind": "llvm", "mcpu": "a/b"},
                                    {"kind": "llvm", "num-cores": 0},
                                    {"kind": "llvm", "num-cores": None}])
def test_metaschedule_target_that_is_not_an_object_with_a_kind_is_bad_target(
        example_db, tmp_path, target):
    _expect_ms_record_error(_ms_copy(example_db, tmp_path, record=_set(1, 2, target)),
                            "bad-target")


@pytest.mark.parametrize("shash", [-1, "", "abc", True, "12 3", None])
def test_metaschedule_workload_with_a_bad_structural_hash_is_bad_structure(
        example_db, tmp_path, shash):
    folder = _ms_copy(example_db, tmp_path, workload=_set(0, shash))
    _expect_error(folder / "database_workload.json", 1, "bad-structure", folder)
    ds = ingest([folder], skip_bad=True)  # its records then refer to no workload
    assert ds.manifest["skipped"] == {"bad-structure": 1, "unknown-workload": 32}


def test_ansor_target_without_a_kind_name_is_bad_target(ansor_lines, tmp_path):
    record = json.loads(ansor_lines[0])
    record["i"][0][1] = "-keys=cuda,gpu -arch=sm_86"
    path = _log(tmp_path, [ansor_lines[1], json.dumps(record).encode()])
    _expect_error(path, 2, "bad-target")


def test_ansor_negative_error_number_is_bad_structure(ansor_lines, tmp_path):
    record = json.loads(ansor_lines[0])
    record["r"][1] = -1
    _expect_error(_log(tmp_path, [json.dumps(record).encode()]), 1, "bad-structure")


@pytest.mark.parametrize("key", ['["matmul_layer"', "matmul", '[1, 1024]', '{"a": 1}',
                                 '["f3c9", [1, 0, 7]]', '["f3c9", [1, -3]]', '["f3c9", [1.5]]'])
def test_ansor_workload_key_that_is_not_a_name_and_shapes_is_bad_workload_key(
        ansor_lines, tmp_path, key):
    record = json.loads(ansor_lines[0])
    record["i"][0][0] = key
    path = _log(tmp_path, [ansor_lines[1], json.dumps(record).encode()])
    _expect_error(path, 2, "bad-workload-key")


def test_ansor_registered_workload_parameters_are_a_shape_only_when_all_are_sizes():
    from gbxfer.records.formats import describe_workload_key

    assert json.loads(describe_workload_key('["matmul_layer", 1, 1024, 1024]')["args"]) == [
        ["", [1, 1024, 1024]]]
    assert describe_workload_key('["conv2d_layer", 128, 3, 1, "SAME"]')["args"] == "[]"
    assert describe_workload_key('["conv2d_layer", 1, 64, 3, 0]')["args"] == "[]"


def test_ingest_takes_one_source_given_as_a_string_or_path(ansor_dir):
    folder = ansor_dir / "gpu_rtx3080"
    n = len(ingest([folder]))
    assert len(ingest(str(folder))) == n
    assert len(ingest(folder)) == n


@pytest.mark.parametrize("target", [42, None, ["llvm"], {"arch": "sm_80"}, {"kind": 7}, "",
                                    '{"mcpu": "znver3"}', "-mcpu=znver3", "'llvm"])
def test_parse_target_rejects_a_target_without_a_kind(target):
    from gbxfer.records.targets import hardware_identity, parse_target

    with pytest.raises(ValueError):
        parse_target(target)
    with pytest.raises(ValueError):
        hardware_identity(target)


@pytest.mark.parametrize("text", [":fam", "", "a/b", "a\\b", ".", "..", ".hidden", "x:../fam",
                                  "a b"])
def test_hardware_option_with_an_empty_or_path_like_name_is_a_gbxfer_error(text):
    from gbxfer.errors import GbxferError
    from gbxfer.records.targets import parse_hardware_option

    with pytest.raises(GbxferError, match="--hardware"):
        parse_hardware_option(text)


def test_hardware_option_with_an_empty_family_means_no_family():
    from gbxfer.records.targets import parse_hardware_option

    assert parse_hardware_option("rig:") == ("rig", None)
    assert parse_hardware_option("rig:gpu") == ("rig", "gpu")


def test_cli_bad_hardware_option_is_a_one_line_error(ansor_lines, tmp_path, capsys):
    path = _log(tmp_path, ansor_lines[:2])
    try:
        code = main(["ingest", str(path), "--out", str(tmp_path / "out"), "--hardware", ":fam"])
    except SystemExit as stop:  # argparse's own one-line error for a bad option value
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert "NAME '' is empty" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
