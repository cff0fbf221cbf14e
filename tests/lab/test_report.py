"""lab/report.py's table: mdb against stock, or against a baseline build of ours run in
the same rounds (`run --baseline`, `report --reference baseline`)."""

from __future__ import annotations

import json

from lab import report


def _rows(path, values: dict[str, list[float]]) -> None:
    with open(path / "results.jsonl", "w") as f:
        for engine, per_round in values.items():
            for rnd, v in enumerate(per_round):
                row = {
                    "experiment": "table4",
                    "metric": "ops_s",
                    "engine": engine,
                    "round": rnd,
                    "value": v,
                }
                f.write(json.dumps(row) + "\n")


def _line(text: str) -> str:
    return next(ln for ln in text.splitlines() if ln.startswith("| table4 | ops_s"))


def test_ratio_against_each_reference(tmp_path) -> None:
    _rows(tmp_path, {"stock": [100, 100, 100], "mdb": [110, 120, 130], "baseline": [200] * 3})
    vs_stock = _line(report.markdown(str(tmp_path)))
    assert "| 1.20 (1.10..1.30) | mdb |" in vs_stock
    text = report.markdown(str(tmp_path), "baseline")
    assert "| baseline | mdb | mdb/baseline |" in text
    assert "| 0.60 (0.55..0.65) | baseline |" in _line(text)


def test_rounds_without_a_pair_are_left_out(tmp_path) -> None:
    _rows(tmp_path, {"baseline": [100, 100], "mdb": [150, 150, 999]})
    assert "| 1.50 (1.50..1.50) | mdb |" in _line(report.markdown(str(tmp_path), "baseline"))


def test_each_load_client_has_its_own_lines_and_its_cpu_bound_is_counted(tmp_path) -> None:
    with open(tmp_path / "results.jsonl", "w") as f:
        for client, rate, share in (("lab", 100.0, 0.30), ("ldload", 150.0, 0.05)):
            for engine in ("stock", "mdb"):
                for metric, v in (("ops_s", rate), ("client_cpu_share", share)):
                    row = {"experiment": "table4", "metric": metric, "engine": engine}
                    row.update(round=0, value=v, client=client, client_cpu_share=share)
                    row["client_bound"] = share > 0.15
                    f.write(json.dumps(row) + "\n")
    text = report.markdown(str(tmp_path))
    assert "| table4 | ops_s | client=lab | 100 | 100 |" in text
    assert "| table4 | ops_s | client=ldload | 150 | 150 |" in text
    assert "- client lab: 4 of 4 rows client_bound; highest client CPU share 30.0%." in text
    assert "- client ldload: 0 of 4 rows client_bound; highest client CPU share 5.0%." in text
