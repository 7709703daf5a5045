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


def test_skip_bad_skips_an_empty_file_among_good_ones(ansor_lines, tmp_path):
    good = _log(tmp_path, ansor_lines[:4], "good.json")
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"\n\n")
    ds = ingest([good, empty], skip_bad=True)
    assert len(ds) == 4
    assert ds.manifest["skipped"] == {"empty-file": 1}
