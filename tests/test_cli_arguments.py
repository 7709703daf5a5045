"""Every bad command-line argument is one error line and exit status 2, never a traceback.

Values outside an option's domain are argparse errors (usage, then one ``error:`` line naming
the option); problems found while running (a storage that does not open, a profile the data
lacks) are gbxfer's one-line ``gbxfer VERB: error: ...``."""
from __future__ import annotations

import argparse

import pytest

from conftest import OTHER, PROFILE, parse_error, run_error

from gbxfer.cli import build_parser, main
from gbxfer.cli._common import shots_option

# --shots -----------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "-2", "nan", "inf", "-inf", "1e999", "1.5", "1.0", "2.0",
                                   "0.0", "abc", ""])
@pytest.mark.parametrize("verb", ["transfer", "study transfer"])
def test_shots_outside_an_integer_k_or_a_fraction_below_one_is_rejected(verb, value, capsys):
    argv = (["transfer", "MODEL", "--target-data", "DATA", "--out", "OUT"] if verb == "transfer"
            else ["study", "transfer", "DATA", "--model", "MODEL"])
    line = parse_error([*argv, f"--shots={value}"], capsys)  # "=": "-inf" is no option
    assert "--shots" in line and "K >= 1" in line and "0 < F < 1" in line


@pytest.mark.parametrize("text, value", [("1", 1), ("8", 8), ("0.5", 0.5), ("1e-1", 0.1),
                                         (".25", 0.25)])
def test_shots_is_an_int_k_or_a_float_fraction(text, value):
    shots = shots_option(text)
    assert shots == value and type(shots) is type(value)


def test_shots_domain_is_stated_in_help(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["transfer", "--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "K >= 1" in text and "0 < F < 1" in text


# every other number --------------------------------------------------------------------------

TRANSFER = ["transfer", "MODEL", "--target-data", "DATA", "--shots", "2", "--out", "OUT"]
STUDY = ["study", "model", "DATA"]
COLLECT = ["collect", "--suite", "S", "--hardware", "H", "--out", "OUT"]
TUNE = ["tune", "--suite", "S", "--hardware", "H", "--out", "OUT"]
BAD_NUMBERS = [
    (TRANSFER, "--tune", ["-1", "1.5", "x"]),
    (TRANSFER, "--test-fraction", ["0", "1", "-0.5", "nan", "inf"]),
    (["explain", "MODEL"], "--top", ["0", "-3", "2.5"]),
    (["train", "DATA", "--out", "OUT"], "--test-fraction", ["0", "1", "1.5", "nan"]),
    (["prune", "DATA", "--out", "OUT"], "--keep", ["0", "-0.1", "1.5", "nan", "inf", "x"]),
    ([*STUDY], "--trials", ["0", "-1", "2.0"]),
    ([*STUDY], "--test-fraction", ["0", "1", "2"]),
    (["hardware", "probe"], "--threads", ["0", "-4", "x"]),
    ([*COLLECT, "--programs", "2"], "--evolutionary-share", ["1", "-0.1", "nan"]),
    ([*COLLECT, "--programs", "2"], "--run-timeout", ["0", "-1", "inf", "nan"]),
    ([*COLLECT, "--programs", "2"], "--batch-size", ["0", "-1"]),
    ([*COLLECT, "--programs", "2"], "--repeats", ["0"]),
    ([*COLLECT, "--programs", "2"], "--min-repeat-ms", ["-1"]),
    ([*COLLECT, "--programs", "2"], "--build-workers", ["0"]),
    (COLLECT, "--programs", ["0", "-5"]),
    (TUNE, "--trials", ["0", "-16"]),
    (TUNE, "--minutes", ["0", "-1", "nan", "inf", "x"]),
    ([*TUNE, "--trials", "16"], "--trials-per-iter", ["0"]),
    ([*TUNE, "--trials", "16"], "--population", ["0"]),
    ([*TUNE, "--trials", "16"], "--repeats", ["0"]),
    ([*TUNE, "--trials", "16"], "--min-repeat-ms", ["-1"]),
    ([*TUNE, "--trials", "16"], "--jobs", ["0", "257", "x"]),
    ([*TUNE, "--trials", "16"], "--parallel-within", ["1", "-0.1", "nan", "x"]),
]


@pytest.mark.parametrize("argv, option, value", [
    pytest.param(argv, option, value, id=f"{argv[0]} {option} {value}")
    for argv, option, values in BAD_NUMBERS for value in values])
def test_number_outside_its_option_domain_is_rejected(argv, option, value, capsys):
    line = parse_error([*argv, f"{option}={value}"], capsys)
    assert option in line and repr(value) in line


def test_every_number_option_has_a_checking_type():
    """No verb takes a bare int or float: each number option states its domain (any seed is
    fine)."""
    def parsers(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from parsers(sub)

    bare = [(p.prog, a.option_strings) for p in parsers(build_parser()) for a in p._actions
            if a.type in (int, float) and a.dest != "seed"]
    assert bare == []


# paths -------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, name", [
    (["info", ""], "DATASET"),
    (["train", "", "--out", "OUT"], "DATASET"),
    (["evaluate", "", "DATA"], "MODEL"),
    (["ingest", "", "--out", "OUT"], "SOURCE"),
    (["train", "DATA", "--out", ""], "--out"),
    (["predict", "MODEL", "DATA", "--out", ""], "--out"),
])
def test_empty_path_is_rejected(argv, name, capsys):
    line = parse_error(argv, capsys)
    assert name in line and "empty" in line


@pytest.mark.parametrize("argv", [
    ["train", "DATA", "--out"],
    ["train", "DATA", "--per-target", "--out"],
    ["transfer", "MODEL", "--target-data", "DATA", "--shots", "2", "--out"],
    ["prune", "DATA", "--keep", "0.5", "--out"],
    ["ingest", "bundled", "--out"],
    ["collect", "--suite", "S", "--hardware", "H", "--programs", "2", "--out"],
    ["tune", "--suite", "S", "--hardware", "H", "--trials", "2", "--out"],
], ids=lambda argv: " ".join(argv[:2]))
def test_output_folder_that_is_a_file_is_rejected_before_any_work(argv, a_file, capsys):
    line = parse_error([*argv, str(a_file)], capsys)
    assert "--out" in line and "not a folder" in line
    assert a_file.read_text() == "not a folder\n"


def test_output_under_a_file_is_rejected(a_file, capsys):
    line = parse_error(["predict", "MODEL", "DATA", "--out", str(a_file / "x.csv")], capsys)
    assert "--out" in line and f"{a_file} is not a folder" in line


@pytest.mark.parametrize("argv", [["predict", "MODEL", "DATA", "--out"],
                                  ["features", "DATA", "--out"],
                                  ["study", "model", "DATA", "--export"]],
                         ids=lambda argv: argv[0])
def test_output_file_that_is_a_folder_is_rejected(argv, tmp_path, capsys):
    line = parse_error([*argv, str(tmp_path)], capsys)
    assert argv[-1] in line and "is a folder" in line


def test_predict_into_a_missing_folder_creates_it(model, small, tmp_path):
    out = tmp_path / "new" / "scores.csv"
    assert main(["predict", str(model), str(small), "--out", str(out), "-q"]) == 0
    assert out.read_text().startswith("program_id,hardware,score")


def test_output_the_system_refuses_is_a_one_line_error(small, capsys):
    """Refused while parsing where this process may not write in /proc, else when writing
    (root may, until the kernel says no)."""
    try:
        code = main(["prune", str(small), "--keep", "0.5", "--out", "/proc/gbxfer-x", "-q"])
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert code == 2 and "Traceback" not in err and len(errors) == 1
    assert "/proc/gbxfer-x" in errors[0]


# names -------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [":fam", ""])
def test_ingest_hardware_without_a_name_is_rejected(value, tmp_path, capsys):
    line = parse_error(["ingest", "bundled", "--out", str(tmp_path / "o"), "--hardware", value],
                       capsys)
    assert "--hardware" in line and "NAME" in line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv", [
    ["evaluate", "{model}", "{small}", "--hardware", "nope"],
    ["transfer", "{model}", "--target-data", "{small}", "--shots", "2", "--hardware", "nope",
     "--out", "{tmp}/t"],
], ids=lambda argv: argv[0])
def test_hardware_profile_the_data_lacks_is_named_with_the_data_profiles(argv, model, small,
                                                                          tmp_path, capsys):
    argv = [a.format(model=model, small=small, tmp=tmp_path) for a in argv]
    line = run_error(argv, capsys)
    assert "'nope'" in line and PROFILE in line and OTHER in line


@pytest.mark.parametrize("value", ["", ",", "program,nope"])
def test_features_blocks_outside_the_known_blocks_are_rejected(value, capsys):
    line = parse_error(["features", "DATA", "--out", "x.csv", "--blocks", value], capsys)
    assert "--blocks" in line and "per_store" in line


@pytest.mark.parametrize("value", ["", "file.txt:main", "net.py:"])
def test_tune_relax_that_is_no_network_or_python_function_is_rejected(value, capsys):
    line = parse_error(["tune", "--relax", value, "--hardware", "H", "--trials", "2", "--out",
                        "OUT"], capsys)
    assert "--relax" in line and "FILE.py:FUNCTION" in line


def test_tune_onnx_that_is_no_file_is_rejected(tmp_path, capsys):
    line = parse_error(["tune", "--onnx", str(tmp_path / "missing.onnx"), "--hardware", "H",
                        "--trials", "2", "--out", "OUT"], capsys)
    assert "--onnx" in line and "no such file" in line


@pytest.mark.parametrize("value", ["x", "x=", "=1,3", "x=1,0", "x=1,,3", "x=a,b", "x=-1,3"])
def test_tune_input_shape_that_is_no_name_and_dimensions_is_rejected(value, a_file, capsys):
    line = parse_error(["tune", "--onnx", str(a_file), "--hardware", "H", "--trials", "2",
                        "--out", "OUT", f"--input-shape={value}"], capsys)
    assert "--input-shape" in line and "NAME=D1,D2,..." in line and repr(value) in line


@pytest.mark.parametrize("budget, message", [
    (["--trials", "8", "--minutes", "1"], "not allowed with argument"),
    ([], "one of the arguments --trials --minutes is required"),
], ids=["both", "neither"])
def test_tune_takes_exactly_one_budget(budget, message, capsys):
    line = parse_error(["tune", "--suite", "S", "--hardware", "H", *budget, "--out", "OUT"],
                       capsys)
    assert message in line


# --storage ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["foo", "", "oracle://host/db", "postgresql:/host/db",
                                   "sqlite:////nonexistent-gbxfer/dir/x.db"])
def test_storage_that_is_no_database_url_is_rejected(value, capsys):
    line = parse_error(["study", "model", "DATA", "--storage", value], capsys)
    assert "--storage" in line


def test_storage_that_does_not_open_is_a_one_line_error(small, tmp_path, capsys):
    not_a_database = tmp_path / "notes.db"
    not_a_database.write_text("hello\n" * 100)
    for url in (f"sqlite:///{not_a_database}", f"sqlite:///{tmp_path}",
                "postgresql://host:port/db"):
        line = run_error(["study", "model", str(small), "--storage", url, "--trials", "1"],
                         capsys)
        assert f"--storage {url}: cannot open the Optuna storage" in line


def test_storage_without_its_database_driver_is_a_one_line_error(small, capsys):
    line = run_error(["study", "model", str(small), "--storage",
                      "postgresql+nosuchdriver://user:secret@nohost/db", "--trials", "1"], capsys)
    assert "cannot open the Optuna storage" in line and "secret" not in line


# evaluate on hardware the model never saw ----------------------------------------------------

def test_evaluate_on_hardware_the_model_never_saw_warns(model, small, capsys):
    assert main(["evaluate", str(model), str(small), "--hardware", OTHER]) == 0
    err = capsys.readouterr().err
    (warning,) = [line for line in err.splitlines() if "zero-shot" in line]
    assert f"trained on {PROFILE}" in warning and f"holds {OTHER}" in warning


def test_evaluate_on_a_dataset_without_the_model_hardware_is_an_error(model, small, tmp_path,
                                                                      capsys):
    from gbxfer.records.dataset import load_dataset

    other = tmp_path / "other"
    load_dataset(small).filter(hardware=[h for h in load_dataset(small).hardware
                                         if h != PROFILE]).save(other)
    line = run_error(["evaluate", str(model), str(other), "--json"], capsys)
    assert f"trained on {PROFILE}" in line and "--hardware" in line


def test_evaluate_on_the_model_hardware_does_not_warn(small, tmp_path, capsys):
    held = tmp_path / "m"
    assert main(["train", str(small), "--target", PROFILE, "--holdout", "within-task",
                 "--out", str(held), "-q"]) == 0
    only = tmp_path / "only"
    from gbxfer.records.dataset import load_dataset

    load_dataset(small).filter(hardware=[PROFILE]).save(only)
    assert main(["evaluate", str(held), str(only)]) == 0
    assert "zero-shot" not in capsys.readouterr().err


# help --------------------------------------------------------------------------------------

@pytest.mark.parametrize("verb", ["ingest", "info", "collect", "hardware", "hardware probe",
                                  "hardware show", "features", "train", "evaluate", "predict",
                                  "explain", "transfer", "prune", "study", "tune", "suite",
                                  "suite show", "calibrate"])
def test_every_verb_has_help(verb, capsys):
    with pytest.raises(SystemExit) as stop:
        main([*verb.split(), "--help"])
    assert stop.value.code == 0
    assert "usage: gbxfer" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["0", "0.02"])
def test_tune_parallel_within_without_a_network_is_refused(value, capsys):
    """Even 0: a suite's tasks are not built into a network, so the option would do nothing."""
    line = run_error(["tune", "--suite", "networks", "--hardware", PROFILE, "--trials", "2",
                      "--out", "OUT", "--parallel-within", value], capsys)
    assert "--parallel-within" in line and "--onnx" in line
