"""What a user meets around the solver: --version, help that loads nothing heavy and shows
plain text with defaults, output files with the user's umask and checked before any work,
"did you mean" for misspelt names, importers that name a file of the wrong format, and
figures that leave the caller's matplotlib backend alone."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from cpsat_rebalancer import InputError, __version__, parse_scenario
from cpsat_rebalancer.cli import COMMANDS, build_parser
from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.importers import IMPORTERS

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, umask: int | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cpsat_rebalancer.cli", *args],
                          capture_output=True, text=True, timeout=300,
                          preexec_fn=None if umask is None else lambda: os.umask(umask))


def test_version_is_the_packages() -> None:
    shown = cli("--version")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert shown.returncode == 0
    assert shown.stdout.strip() == f"cpsat-rebalancer {__version__}"
    assert __version__ == project["version"]


def test_help_loads_neither_ortools_nor_pandas_nor_numpy() -> None:
    """``cpsat-rebalancer --help`` imports only the command line's own light modules (what
    keeps it under half a second), yet lists every command."""
    script = ("import sys, json\n"
              "from cpsat_rebalancer.cli import main\n"
              "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
              "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
              "('ortools', 'pandas', 'numpy', 'scipy', 'matplotlib', 'yaml', 'pyarrow'))\n"
              "ours = sorted(m for m in sys.modules if m.startswith('cpsat_rebalancer'))\n"
              "print(json.dumps([heavy, ours]), file=sys.stderr)\n")
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=60)
    heavy, ours = json.loads(shown.stderr.strip().splitlines()[-1])
    assert heavy == []
    assert ours == ["cpsat_rebalancer", "cpsat_rebalancer.cli", "cpsat_rebalancer.errors"]
    for name in COMMANDS:
        assert f"\n    {name} " in shown.stdout
    assert "no default time limit" in " ".join(shown.stdout.split())


def parsers(parser: argparse.ArgumentParser, name: str = "cpsat-rebalancer"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                yield from parsers(sub, f"{name} {command}")


def test_help_is_plain_text_with_the_defaults() -> None:
    full = build_parser()
    seen = 0
    for name, parser in parsers(full):
        text = parser.format_help()
        for markup in ("``", "`", ":mod:", ":func:", ":class:", ":meth:"):
            assert markup not in text, (name, markup)
        for action in parser._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS:
                continue
            if action.default not in (None, False, [], argparse.SUPPRESS):
                assert "default" in parser._get_formatter()._expand_help(action), \
                    (name, action.dest)
                seen += 1
    assert seen >= 5  # --time-limit of vcd, --load, --executor, --solver, ...
    solve = build_parser(["solve"])._subparsers._group_actions[0].choices["solve"]
    assert "no default time limit" in " ".join(solve.format_help().split())


def test_the_lists_of_commands_agree() -> None:
    """The command list --help shows without importing the commands is the commands' own."""
    listed = build_parser(["--help"])._subparsers._group_actions[0]
    full = build_parser()._subparsers._group_actions[0]
    assert list(listed.choices) == list(COMMANDS)
    assert sorted(full.choices) == sorted(COMMANDS)
    own = {a.dest: a.help for a in full._choices_actions}
    assert own == {name: text for name, (_, text) in COMMANDS.items()}


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(balance_instance(40, 4, seed=1)))
    return path


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_outputs_get_the_users_umask(tmp_path: Path, scenario_file: Path, umask: int,
                                     mode: int) -> None:
    result = tmp_path / "result.json"
    solved = cli("solve", str(scenario_file), "--json", str(result), "--quiet", umask=umask)
    assert solved.returncode == 0, solved.stderr
    assert result.stat().st_mode & 0o777 == mode
    instance = tmp_path / "tiny.txt"
    instance.write_text("3\n10\n4\n5\n6\n")
    imported = tmp_path / "tiny.json"
    done = cli("import", "binpacking", str(instance), str(imported), umask=umask)
    assert done.returncode == 0, done.stderr
    assert imported.stat().st_mode & 0o777 == mode


@pytest.mark.parametrize("where, says", [
    ("missing/out.json", "does not exist"),
    (".", "is a folder, not a file"),
    ("s.json", "is the input"),
])
def test_a_bad_output_path_fails_before_the_solve(tmp_path: Path, scenario_file: Path,
                                                  where: str, says: str) -> None:
    before = scenario_file.read_text()
    failed = cli("solve", str(scenario_file), "--json", str(tmp_path / where))
    assert failed.returncode == 2
    assert failed.stderr.startswith("error: --json: ") and says in failed.stderr
    assert "[solve]" not in failed.stderr and failed.stdout == ""  # nothing was solved
    assert scenario_file.read_text() == before


@pytest.mark.parametrize("change, path, suggestion", [
    (lambda d: d["goals"][0]["spec"]["balanceSpec"].update(dimenson="cpu"),
     "goals[0].spec.balanceSpec.dimenson", "did you mean 'dimension'?"),
    (lambda d: d["goals"][0].update(spec={"balanceSpc": d["goals"][0]["spec"]["balanceSpec"]}),
     "goals[0].spec", "did you mean 'balanceSpec'?"),
    (lambda d: d["goals"][0]["spec"]["balanceSpec"].update(formula="square"),
     "goals[0].spec.balanceSpec.formula", "did you mean 'SQUARES'?"),
    (lambda d: d["constraints"][0].update(policy="HRAD"),
     "constraints[0].policy", "did you mean 'HARD'?"),
    (lambda d: d.update(contanerDimensions=d.pop("containerDimensions")),
     "contanerDimensions", "did you mean 'containerDimensions'?"),
    (lambda d: d["goals"][0]["spec"]["balanceSpec"].update(scope="hots"),
     "goals[0].spec.balanceSpec.scope", "did you mean 'host'?"),
])
def test_misspelt_names_get_a_suggestion(change, path: str, suggestion: str) -> None:
    data = balance_instance(12, 3, seed=1)
    change(data)
    with pytest.raises(InputError) as caught:
        parse_scenario(data)
    assert caught.value.path == path
    assert suggestion in str(caught.value)


def test_no_suggestion_for_a_name_like_none() -> None:
    data = balance_instance(12, 3, seed=1)
    data["goals"][0]["spec"]["balanceSpec"]["zzz"] = 1
    with pytest.raises(InputError, match="unknown field of balanceSpec") as caught:
        parse_scenario(data)
    assert "did you mean" not in str(caught.value)


def gap_text() -> str:
    # 2 agents, 3 items: costs, weights, capacities
    return "2 3\n1 2 3\n4 5 6\n1 1 1\n2 2 2\n5 5\n"


@pytest.mark.parametrize("kind, content, says", [
    ("gap", json.dumps(balance_instance(4, 2, seed=1)), "a JSON file (a scenario?)"),
    ("gap", "name: x\nassignment: {}\n", "a YAML or JSON file"),
    ("gap", "5\n10\n1\n2\n3\n4\n5\n", "it looks like a bin-packing instance"),
    ("binpacking", gap_text(), "it looks like a GAP instance"),
    ("gap", "2 3\n1 2 3\n", "not a GAP instance"),
    ("binpacking", b"\x89PNG\r\n\x1a\n\x00\xff", "not a text file"),
])
def test_import_names_a_file_of_the_wrong_format(tmp_path: Path, kind: str, content,
                                                 says: str) -> None:
    path = tmp_path / "instance"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(InputError) as caught:
        IMPORTERS[kind](path)
    assert says in str(caught.value) and caught.value.path == str(path)
    out = tmp_path / "out.json"
    failed = cli("import", kind, str(path), str(out))
    assert failed.returncode == 2 and says in failed.stderr and not out.exists()


def test_the_right_formats_still_import(tmp_path: Path) -> None:
    gap = tmp_path / "gap.txt"
    gap.write_text(gap_text())
    data = IMPORTERS["gap"](gap)
    assert sum(len(v) for v in data["assignment"].values()) == 3


PLOT_SCRIPT = """
import json, sys
import matplotlib
matplotlib.use("svg")  # the caller's own backend
from matplotlib.figure import Figure
from cpsat_rebalancer.compare import compare, plot_utilization
from cpsat_rebalancer.generators import balance_instance
comparison = compare(balance_instance(12, 3, seed=1), ["greedy-balance"])
figure = plot_utilization(comparison)
path = sys.argv[1]
written = plot_utilization(comparison, path)
print(json.dumps({"backend": matplotlib.get_backend(), "figure": isinstance(figure, Figure),
                  "written": isinstance(written, Figure),
                  "bars": len(figure.axes[0].patches),
                  "pyplot": "matplotlib.pyplot" in sys.modules}))
"""


def test_figures_come_back_and_the_backend_stays(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "u.png"
    shown = subprocess.run([sys.executable, "-c", PLOT_SCRIPT, str(png)], capture_output=True,
                           text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    seen = json.loads(shown.stdout.strip().splitlines()[-1])
    assert seen == {"backend": "svg", "figure": True, "written": True, "bars": 3 * 3,
                    "pyplot": False}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
