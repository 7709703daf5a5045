"""The README's Python example runs as written, on the public API."""
from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_python_section_runs(tmp_path, monkeypatch, capsys):
    text = README.read_text()
    after = text[text.index("The same from Python"):]
    code = re.search(r"```python\n(.*?)```", after, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{README}:python", "exec"), {})
    assert (tmp_path / "my-model" / "manifest.json").is_file()
    printed = capsys.readouterr().out.splitlines()
    pca, top1, random_top1 = map(float, printed[0].split())
    assert 0.5 < pca <= 1 and random_top1 < top1 <= 1
    assert "'pca'" in printed[1]
