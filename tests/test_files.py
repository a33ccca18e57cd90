"""Files: writes are whole or nothing and leave nothing behind, even under SIGKILL; every
output path of every subcommand is checked before any work starts (not an input, not
another output, in a folder that exists and can be written)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from cpsat_rebalancer import cli, files
from cpsat_rebalancer.cli.common import write_atomically

SCENARIOS = Path(__file__).parents[1] / "scenarios"
SEED = SCENARIOS / "seed_balance_memory.json"
UNNAMED = sys.platform.startswith("linux") and hasattr(os, "O_TMPFILE")


@pytest.fixture
def umask_022():
    before = os.umask(0o022)
    yield
    os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ---------------------------------------------------------------- atomic writes


@pytest.mark.parametrize("way", ["unnamed", "named"])
def test_write_gives_the_contents_and_the_umask(tmp_path, umask_022, monkeypatch, way):
    if way == "named":  # the portable way, as on a system without O_TMPFILE
        monkeypatch.setattr(files, "_unnamed", lambda folder, mode: None)
    elif not UNNAMED:
        pytest.skip("no O_TMPFILE here")
    target = tmp_path / "out.json"
    write_atomically(target, "héllo\n")
    assert target.read_text(encoding="utf-8") == "héllo\n" and mode(target) == 0o644
    write_atomically(target, (part for part in [b"a", "b", b"c" * 100_000]))
    assert target.read_bytes() == b"ab" + b"c" * 100_000 and mode(target) == 0o644
    write_atomically(target, "#!/bin/sh\n", mode=0o777)  # a script: executable
    assert mode(target) == 0o755
    assert os.listdir(tmp_path) == ["out.json"]


@pytest.mark.parametrize("way", ["unnamed", "named"])
def test_failed_write_leaves_the_old_file_alone(tmp_path, monkeypatch, way):
    if way == "named":
        monkeypatch.setattr(files, "_unnamed", lambda folder, mode: None)
    target = tmp_path / "out.json"
    target.write_text("before")

    def broken():
        yield "half of it"
        raise RuntimeError("the data failed mid-way")

    with pytest.raises(RuntimeError):
        write_atomically(target, broken())
    assert target.read_text() == "before" and os.listdir(tmp_path) == ["out.json"]


@pytest.mark.skipif(not UNNAMED, reason="only an unnamed file survives SIGKILL unseen")
def test_sigkill_in_the_middle_of_a_write_leaves_only_the_target(tmp_path):
    """A child writes 25 MB slowly through write_atomically and is killed part-way."""
    target = tmp_path / "big.json"
    target.write_text("the original")
    child = textwrap.dedent(f"""
        import time
        from cpsat_rebalancer.cli.common import write_atomically

        def chunks():
            for k in range(400):
                if k == 20:
                    print("writing", flush=True)
                yield b"x" * 65536
                time.sleep(0.01)

        write_atomically({str(target)!r}, chunks())
        print("done", flush=True)
    """)
    process = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout.readline().strip() == "writing"
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    assert os.listdir(tmp_path) == ["big.json"]
    assert target.read_text() == "the original"


# ---------------------------------------------------------------- output paths


def study_file(folder: Path, name: str = "study.yaml") -> Path:
    (folder / "base.json").write_text(SEED.read_text())
    path = folder / name
    path.write_text(yaml.safe_dump({"base": "base.json",
                                    "grid": {"solver.seed": [0, 1]}}))
    return path


def cases(tmp: Path) -> list[tuple[list[str], str, str]]:
    """(arguments, the option the error names, words of the error) per refused output."""
    scenario = tmp / "scenario.json"
    scenario.write_text(SEED.read_text())
    (tmp / "hard.json").hardlink_to(scenario)
    (tmp / "soft.json").symlink_to(scenario)
    assignment = tmp / "assignment.json"
    assignment.write_text(json.dumps({"task0": "host0"}))
    vcd = tmp / "vcd.json"
    vcd.write_text("{}")
    study = study_file(tmp)
    (tmp / "folder").mkdir()
    s, a = str(scenario), str(assignment)
    return [
        (["solve", s, "--json", s], "--json", "is the input"),
        (["solve", s, "--json", str(tmp / "hard.json")], "--json", "is the input"),
        (["solve", s, "--json", str(tmp / "soft.json")], "--json", "is the input"),
        (["solve", s, "--hint", a, "--json", a], "--json", "is the input"),
        (["solve", s, "--json", str(tmp / "missing" / "r.json")], "--json", "does not exist"),
        (["solve", s, "--json", str(tmp / "folder")], "--json", "is a folder"),
        (["evaluate", s, "--assignment", a, "--json", a], "--json", "is the input"),
        (["compare", s, "--heuristic", "greedy-balance", "--json", s], "--json", "is the input"),
        (["compare", s, "--heuristic", "greedy-balance", "--json", str(tmp / "c.json"),
          "--plot", str(tmp / "c.json")], "--plot", "also the output of --json"),
        (["compare", s, "--assignment", a, "--plot", a], "--plot", "is the input"),
        (["export", s, "--to", "rebalancer-python", s], "OUT.py", "is the input"),
        (["import", "gap", s, s], "OUT", "is the input"),
        (["vcd", "place", str(vcd), "--json", str(vcd)], "--json", "is the input"),
        (["vcd", "compare", s, str(vcd), "--json", str(vcd)], "--json", "is the input"),
        (["vcd", "generate", str(tmp / "no" / "v.json"), "--vms", "2", "--clusters", "1"],
         "OUT", "does not exist"),
        (["study", "run", str(study), "--out", str(study)], "--out", "is the input"),
        (["study", "run", str(study), "--out", str(tmp / "base.json")], "--out",
         "is a file, not a folder"),
        (["study", "run", str(study), "--out", str(tmp / "no" / "out")], "--out",
         "does not exist"),
    ]


def test_every_output_is_checked_before_any_work(tmp_path, capsys):
    for args, option, words in cases(tmp_path):
        before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
        code = cli.main(args)
        out, err = capsys.readouterr()
        assert code == 2, (args, out, err)
        assert err.startswith(f"error: {option}: ") and words in err, (args, err)
        assert out == "", (args, out)  # nothing solved, nothing printed
        after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
        assert after == before, args  # every input as it was, nothing written


def test_study_output_folder_may_not_overwrite_the_study(tmp_path, capsys):
    """``--out`` the study's own folder: its study.json would replace the study file."""
    study = study_file(tmp_path, "study.json")
    text = study.read_text()
    assert cli.main(["study", "run", str(study), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out: would overwrite the input") and "study.json" in err
    assert study.read_text() == text and not (tmp_path / "variants").exists()


def test_unwritable_folder_is_refused(tmp_path, capsys):
    if os.geteuid() == 0:  # root writes anywhere but here: /proc/1 takes no new files
        folder = Path("/proc/1")
    else:
        folder = tmp_path / "locked"
        folder.mkdir()
        folder.chmod(0o500)
    code = cli.main(["solve", str(SEED), "--json", str(folder / "r.json")])
    assert code == 2
    assert capsys.readouterr().err.startswith("error: --json: cannot write in the folder")


def test_outputs_elsewhere_are_written(tmp_path, capsys):
    """The check refuses only what it should: a fresh file and a new study folder."""
    result = tmp_path / "r.json"
    assert cli.main(["solve", str(SEED), "--json", str(result), "--workers", "1"]) == 0
    assert json.loads(result.read_text())["status"] == "OPTIMAL"
    assert cli.main(["solve", str(SEED), "--json", str(result), "--workers", "1"]) == 0
    study = study_file(tmp_path)
    assert cli.main(["study", "run", str(study), "--workers", "1"]) == 0  # default folder
    assert (tmp_path / "study" / "results.parquet").exists()
    capsys.readouterr()
