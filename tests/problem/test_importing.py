"""load_problem: a problem module that fails to import is named in one line, with file and line."""

import sys
import textwrap

import pytest

from pinn import ConfigError, load_problem

GOOD_TAIL = """
from pinn import Box, Problem


class Reaction(Problem):
    domain = Box([0.0], [1.0])

    def residual(self, x, u):
        return u.d2("x")
"""


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """An empty working directory on sys.path, as `pinn` run from a user's folder sees it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:  # the next test imports its own modules afresh
        if not name.startswith(("pinn", "torch", "numpy")):
            del sys.modules[name]


def write(folder, name: str, source: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(source))


def refusal(target: str) -> str:
    with pytest.raises(ConfigError) as error:
        load_problem(target)
    message = str(error.value)
    assert "\n" not in message  # one line
    return message


def test_a_module_that_imports_fine_loads(folder):
    write(folder, "reaction_ok", GOOD_TAIL)
    assert type(load_problem("reaction_ok.Reaction")).__name__ == "Reaction"


def test_a_missing_dependency_is_named_with_its_import_line(folder):
    write(folder, "reaction_dep", "import math\n\nimport notinstalledpkg_xyz.linalg\n" + GOOD_TAIL)
    assert refusal("reaction_dep.Reaction") == (
        "problem.target='reaction_dep.Reaction': reaction_dep.py line 3 imports "
        "notinstalledpkg_xyz, which is not installed: pip install notinstalledpkg_xyz"
    )


def test_a_missing_dependency_of_a_helper_names_the_helper(folder):
    write(folder, "reaction_helper", "import notinstalledpkg_abc\n")
    write(folder, "reaction_uses", "from reaction_helper import *\n" + GOOD_TAIL)
    message = refusal("reaction_uses.Reaction")
    assert (
        "reaction_helper.py line 1 imports notinstalledpkg_abc, which is not installed" in message
    )


def test_a_syntax_error_gives_file_line_and_message(folder):
    write(folder, "reaction_syntax", "import torch\n\ndef residual(self, x, u)\n    return u\n")
    message = refusal("reaction_syntax.Reaction")
    assert message.startswith(
        "problem.target='reaction_syntax.Reaction': reaction_syntax.py line 3:"
    )
    assert "SyntaxError: expected ':'" in message


def test_a_name_error_at_import_gives_file_line_and_error(folder):
    write(folder, "reaction_name", "import torch\n\nSCALE = tourch.pi\n" + GOOD_TAIL)
    assert refusal("reaction_name.Reaction") == (
        "problem.target='reaction_name.Reaction': reaction_name.py line 3: "
        "NameError: name 'tourch' is not defined"
    )


def test_a_data_file_missing_at_import_is_named(folder):
    write(folder, "reaction_data", "import numpy as np\n\nDATA = np.load('missing.npz')\n")
    message = refusal("reaction_data.Reaction")
    assert message.startswith("problem.target='reaction_data.Reaction': reaction_data.py line 3: ")
    assert "FileNotFoundError" in message and "missing.npz" in message


def test_a_missing_module_file_says_where_it_was_looked_for(folder):
    message = refusal("reaction_nowhere.Reaction")
    assert "there is no module 'reaction_nowhere' (no reaction_nowhere.py in " in message
    assert str(folder) in message and "PYTHONPATH" in message


def test_a_missing_package_of_the_target_is_the_target_not_a_dependency(folder):
    message = refusal("mypdes_nowhere.reaction.Reaction")
    assert "there is no module 'mypdes_nowhere.reaction'" in message
    assert "mypdes_nowhere/reaction.py" in message and "pip install" not in message


def test_a_misspelled_class_gets_the_close_name_and_otherwise_the_list(folder):
    module = (
        "from pinn import Box, Problem\n\n\n"
        "class Holed(Problem):\n    domain = Box([0.0], [1.0])\n\n\n"
        "class Other(Problem):\n    domain = Box([0.0], [1.0])\n"
    )
    write(folder, "reaction_holed", module)
    assert "did you mean reaction_holed.Holed?" in refusal("reaction_holed.Holded")
    assert "(it has Holed, Other)" in refusal("reaction_holed.Wave")


def test_a_module_without_the_class_says_so(folder):
    write(folder, "reaction_empty", "X = 1\n")
    assert "reaction_empty has no Problem subclass named 'Reaction'" in refusal(
        "reaction_empty.Reaction"
    )
