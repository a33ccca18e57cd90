"""Code from data files: a study names generators and heuristics from the project's
registries or installed plugins; a ``.py`` beside it runs only with ``allow_code``; anything
else is refused, naming the field, before anything is imported. ``export`` embeds every
string as a literal: no name can inject code into the script it writes."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml
from wheel_stand_in import Recorder

from cpsat_rebalancer import cli, parse_scenario
from cpsat_rebalancer.errors import InputError
from cpsat_rebalancer.heuristics import make_heuristic
from cpsat_rebalancer.peer import export_rebalancer_python, find_peer_python
from cpsat_rebalancer.peer.bridge import normalise_scenario, scenario_run
from cpsat_rebalancer.peer.solve import solver_spec
from cpsat_rebalancer.peer.wheel_runner import solve_run
from cpsat_rebalancer.studies import load_study, run_study

SCENARIOS = Path(__file__).parents[1] / "scenarios"
SEED = SCENARIOS / "seed_balance_memory.json"
# code that leaves a mark when it runs: importing evil_mod, or calling its function
EVIL = ("from pathlib import Path\nPath(__file__).with_name('IMPORTED').touch()\n"
        "def f(**kwargs):\n    Path(__file__).with_name('CALLED').touch()\n"
        "    return {}\n")
TINY = ("import json\nfrom pathlib import Path\n"
        f"def tiny(**kwargs):\n    return json.loads({SEED.read_text()!r})\n"
        "def stay(instance):\n    return instance.problem.initial.copy()\n")


def study(folder: Path, content: dict, name: str = "study.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "base.json").write_text(SEED.read_text())
    path = folder / name
    path.write_text(yaml.safe_dump({"base": "base.json", **content}))
    return path


def refused(path: Path, where: str, allow_code: bool = False) -> str:
    with pytest.raises(InputError) as error:
        load_study(path, allow_code=allow_code)
    assert error.value.path == where
    return str(error.value)


@pytest.fixture
def evil(tmp_path, monkeypatch):
    """An importable module ``evil_mod`` (and the file evil.py) that mark when they run."""
    (tmp_path / "evil_mod.py").write_text(EVIL)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "evil_mod", raising=False)
    yield tmp_path
    assert not (tmp_path / "IMPORTED").exists() and not (tmp_path / "CALLED").exists()
    assert "evil_mod" not in sys.modules


@pytest.mark.parametrize("allow_code", [False, True])
@pytest.mark.parametrize("generator", ["os:system", "subprocess:getoutput", "evil_mod:f",
                                       "cpsat_rebalancer.generators:drain_cluster"])
def test_a_module_as_generator_is_refused_unimported(evil, generator, allow_code):
    path = study(evil / "s", {})
    path.write_text(yaml.safe_dump({"base": {"generator": generator,
                                             "args": {"command": "touch PWNED"}}}))
    message = refused(path, "base.generator", allow_code)
    assert "unknown generator" in message and "drain_cluster" in message
    if generator.startswith("cpsat_rebalancer"):
        assert "write the plain name drain_cluster" in message
    assert not (evil / "s" / "PWNED").exists()


@pytest.mark.parametrize("allow_code", [False, True])
@pytest.mark.parametrize("heuristic", ["os:system", "evil_mod:f", "evil_mod"])
def test_a_module_as_heuristic_is_refused_unimported(evil, heuristic, allow_code):
    path = study(evil / "s", {"heuristics": ["greedy-balance", heuristic]})
    message = refused(path, "heuristics[1]", allow_code)
    assert "module" in message or "unknown heuristic" in message


@pytest.mark.parametrize("field", ["generator", "heuristic"])
def test_a_py_file_outside_the_study_folder_is_refused(evil, field):
    (evil / "evil.py").write_text(EVIL)
    inside = evil / "s"
    inside.mkdir()
    (inside / "link.py").symlink_to(evil / "evil.py")  # inside by name, outside in fact
    for reference in ("../evil.py:f", str(evil / "evil.py") + ":f", "link.py:f"):
        content = ({"base": {"generator": reference}} if field == "generator"
                   else {"heuristics": [reference]})
        path = study(inside, content)
        if field == "generator":
            path.write_text(yaml.safe_dump(content))
        message = refused(path, "base.generator" if field == "generator"
                          else "heuristics[0]", allow_code=True)
        assert "must lie in its folder" in message


def test_a_py_file_beside_the_study_runs_only_when_allowed(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "mine.py").write_text(TINY)
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump({"base": {"generator": "mine.py:tiny"},
                                    "heuristics": ["mine.py:stay"],
                                    "solver": {"workers": 1},
                                    "grid": {"solver.seed": [0, 1]}}))
    assert "--allow-code" in refused(path, "base.generator")
    path.write_text(yaml.safe_dump({"base": "../" + SEED.name, "heuristics": ["mine.py:stay"]}))
    (tmp_path / SEED.name).write_text(SEED.read_text())
    assert "--allow-code" in refused(path, "heuristics[0]")
    path.write_text(yaml.safe_dump({"base": {"generator": "mine.py:tiny"},
                                    "heuristics": ["mine.py:stay"],
                                    "solver": {"workers": 1},
                                    "grid": {"solver.seed": [0, 1]}}))
    loaded = load_study(path, allow_code=True)
    outcome = run_study(loaded, tmp_path / "out", workers=1, progress=None)  # in a worker
    assert outcome.failed == 0 and len(outcome.results) == 2
    assert set(outcome.results["status"]) == {"OPTIMAL"}
    assert (outcome.results["h.mine.py:stay.moves"] == 0).all()  # stay-put moved nothing


def test_study_run_on_the_command_line_needs_allow_code(tmp_path, capsys):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "mine.py").write_text(TINY)
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump({"base": {"generator": "mine.py:tiny"},
                                    "solver": {"workers": 1}}))
    out = str(tmp_path / "out")
    assert cli.main(["study", "run", str(path), "--out", out, "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: base.generator: ") and "--allow-code" in err
    assert not (tmp_path / "out").exists()
    assert cli.main(["study", "run", str(path), "--out", out, "--workers", "1",
                     "--allow-code"]) == 0
    assert "1 variants computed" in capsys.readouterr().out


def test_registry_names_and_the_bundled_studies(tmp_path):
    path = study(tmp_path, {})
    path.write_text(yaml.safe_dump({"base": {"generator": "drain_cluster",
                                             "args": {"hosts": 3}}}))
    assert len(load_study(path).base_scenario()["assignment"]) == 3
    drain = load_study(SCENARIOS / "studies" / "drain_waves.yaml")
    assert drain.base["generator"] == "drain_cluster"
    gpu = SCENARIOS / "studies" / "gpu_capacity.yaml"
    assert "--allow-code" in refused(gpu, "base.generator")
    allowed = load_study(gpu, allow_code=True)
    assert allowed.base["generator"] == str(gpu.parent / "gpu_alibaba.py") + ":gpu_cluster"


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """An installed distribution declaring a generator and a heuristic as entry points."""
    site = tmp_path / "site"
    info = site / "tiny_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[cpsat_rebalancer.generators]\ntiny = tiny_plugin:tiny\n\n"
        "[cpsat_rebalancer.heuristics]\nstay-put = tiny_plugin:stay\n")
    (site / "tiny_plugin.py").write_text(TINY)
    monkeypatch.syspath_prepend(str(site))
    return site


def test_installed_plugins_need_no_allow_code(plugins, tmp_path, capsys):
    path = study(tmp_path / "s", {})
    path.write_text(yaml.safe_dump({"base": {"generator": "tiny"}, "heuristics": ["stay-put"],
                                    "solver": {"workers": 1}}))
    outcome = run_study(load_study(path), tmp_path / "out", workers=1, progress=None)
    assert outcome.failed == 0 and (outcome.results["h.stay-put.moves"] == 0).all()
    code = cli.main(["compare", str(SEED), "--heuristic", "stay-put", "--workers", "1"])
    assert code == 0 and "stay-put" in capsys.readouterr().out
    with pytest.raises(InputError, match="installed plugins: stay-put"):
        make_heuristic("no-such-thing")


def test_compare_runs_your_module_only_with_allow_code(tmp_path, monkeypatch, capsys):
    (tmp_path / "mine_mod.py").write_text(TINY)
    (tmp_path / "mine.py").write_text(TINY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "mine_mod", raising=False)
    for heuristic in ("mine_mod:stay", "mine.py:stay"):
        args = ["compare", str(SEED), "--heuristic", heuristic, "--workers", "1"]
        assert cli.main(args) == 2
        out, err = capsys.readouterr()
        assert err.startswith("error: --heuristic: ") and "pass --allow-code" in err
        assert out == ""
        assert heuristic != "mine_mod:stay" or "mine_mod" not in sys.modules
        assert cli.main([*args, "--allow-code"]) == 0
        assert heuristic in capsys.readouterr().out
    monkeypatch.delitem(sys.modules, "mine_mod")


# ---------------------------------------------------------------- export


PAYLOAD = 'x"""\nimport os; os.system("touch PWNED")\n"""\'{}\\\\ \\n'


def awkward_scenario(mark: str) -> dict:
    """Objects, containers, a dimension and the scenario's name and description, every
    one carrying ``mark`` (quotes, a newline, backslashes, braces: or nothing)."""
    objects = [f"t{k}{mark}" for k in range(3)]
    hosts = [f"h{k}{mark}" for k in range(2)]
    dim = f"cpu{mark}"
    data = {
        "name": f"case{mark}", "description": f"about{mark}", "containerName": "host",
        "assignment": {hosts[0]: objects[:2], hosts[1]: objects[2:]},
        "objectDimensions": {dim: dict.fromkeys(objects, 1)},
        "containerDimensions": {dim: dict.fromkeys(hosts, 3)},
        "goals": [{"spec": {"balanceSpec": {"name": f"bal{mark}", "scope": "host",
                                            "dimension": dim}}},
                  {"boundary": True},
                  {"spec": {"minimizeMovementSpec": {"name": "moves", "scope": "host"}}}],
        "constraints": [{"spec": {"avoidMovingSpec": {"name": f"keep{mark}",
                                                      "objects": [objects[0]]}},
                         "policy": "HARD"}]}
    parse_scenario(data)
    return data


def shape(text: str) -> str:
    """The script's syntax tree with every string blanked: the code, not the data."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.dump(tree)


def test_export_embeds_every_string_as_data(tmp_path, monkeypatch, capsys):
    data = awkward_scenario(PAYLOAD)
    text = export_rebalancer_python(data, source=f"a{PAYLOAD}.json", script=f"s{PAYLOAD}.py")
    plain = export_rebalancer_python(awkward_scenario(""), source="a.json", script="s.py")
    assert shape(text) == shape(plain)  # the same code: the payload stayed a string
    about = next(n for n in ast.parse(text).body if isinstance(n, ast.Assign)
                 and n.targets[0].id == "ABOUT")
    assert ast.literal_eval(about.value)["scenario"] == data["name"]
    # run with a stand-in for the wheel: the names arrive exactly as written
    module = types.ModuleType("rebalancer")
    module.ProblemSolver = Recorder
    monkeypatch.setitem(sys.modules, "rebalancer", module)
    monkeypatch.setattr(sys, "argv", ["script.py"])
    monkeypatch.chdir(tmp_path)
    run = scenario_run(normalise_scenario(data), solver_spec("local-search", None), tagged=False)
    Recorder.calls = []
    solve_run(run)
    expected = [call for call in Recorder.calls if call[0] != "__init__"]
    Recorder.calls = []
    exec(compile(text, "script.py", "exec"), {"__name__": "__main__"})
    assert [call for call in Recorder.calls if call[0] != "__init__"] == expected
    assert ("set_assignment", (data["assignment"],), {}) in Recorder.calls
    assert not (tmp_path / "PWNED").exists()
    assert data["name"] in capsys.readouterr().out


def test_cli_export_of_an_awkwardly_named_file(tmp_path, capsys):
    source = tmp_path / f"in{PAYLOAD.replace('/', '')}.json"
    source.write_text(json.dumps(awkward_scenario(PAYLOAD)))
    out = tmp_path / "case.py"
    assert cli.main(["export", str(source), "--to", "rebalancer-python", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text()
    assert shape(text) == shape(export_rebalancer_python(awkward_scenario(""), source="x"))
    peer = find_peer_python()
    if peer is None:
        return  # the wheel's interpreter is not here: parsing is what can be checked
    done = subprocess.run([peer, str(out), str(tmp_path / "solution.json")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Objective per tuple position" in done.stdout
    assert not (tmp_path / "PWNED").exists()
    solution = json.loads((tmp_path / "solution.json").read_text())
    assert set(solution["assignment"]) == {f"t{k}{PAYLOAD}" for k in range(3)}
