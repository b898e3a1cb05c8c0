"""The re-check commands of proofs/README.md and counterexamples/README.md: one record passes,
and an edited record fails (exit 1, the problem named)."""
from __future__ import annotations

import json
import shutil

from mmaformal import cli
from mmaformal.query import cex
from mmaformal.query.store import PROOFS

PROOF = PROOFS / "equiv" / "sm80_mma.m16n8k16.f32.f16.f16.f32--2_sm80_mma.m16n8k8.f32.f16.f16.f32.json"
CEX = cex.ROOT / "monotonic" / "sm70_mma.m8n8k4.f32.f16.f16.f32-e6759664fa.json"


def test_proof_record_checks_and_fails_when_edited(tmp_path, capsys):
    assert cli.main(["store", "recheck", str(PROOF), "--no-solve"]) == 0
    assert "1 of 1 records hold" in capsys.readouterr().out
    rec = json.loads(PROOF.read_text())
    shutil.copy(PROOF.with_name(rec["query"]), tmp_path / rec["query"])
    rec["twin"]["status"] = "unknown"
    (tmp_path / PROOF.name).write_text(json.dumps(rec))
    assert cli.main(["store", "recheck", str(tmp_path / PROOF.name), "--no-solve"]) == 1
    assert "no refuted broken twin" in capsys.readouterr().out
    (tmp_path / rec["query"]).write_text("(check-sat)\n")
    rec["twin"]["status"] = "sat"
    (tmp_path / PROOF.name).write_text(json.dumps(rec))
    assert cli.main(["store", "recheck", str(tmp_path / PROOF.name), "--no-solve"]) == 1
    assert "does not hash to query_sha256" in capsys.readouterr().out
    assert cli.main(["store", "recheck", str(tmp_path / "missing.json")]) == 2


def test_counterexample_replays_and_fails_when_edited(tmp_path, capsys):
    assert cli.main(["store", "replay", str(CEX), "--backends", "int,numpy"]) == 0
    assert "1 of 1 records replay" in capsys.readouterr().out
    rec = json.loads(CEX.read_text())
    out = int(rec["runs"][1]["output"], 16)
    rec["runs"][1]["output"] = f"0x{out ^ 1:08X}"
    (tmp_path / CEX.name).write_text(json.dumps(rec))
    assert cli.main(["store", "replay", str(tmp_path / CEX.name), "--backends", "int"]) == 1
    assert "FAIL" in capsys.readouterr().out
    assert cli.main(["store", "replay", str(tmp_path / CEX.name), "--backends", "int", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["status"] == "FAIL" and rows[0]["problems"]
    for argv in (["store", "replay", str(tmp_path / "missing.json")],
                 ["store", "replay", str(PROOF)],                    # a proof, not a counterexample
                 ["store", "replay", str(CEX), "--backends", "int,gpu"]):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("mmaformal") and "Traceback" not in err
