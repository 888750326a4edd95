"""Native writes to descriptor 1 stay off standard output; Python's writes reach it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from service.native_stdout import divert_native_stdout

# A single-shape fleet model from a 1-bucket plan on the bundled catalog (aggregate form:
# sum_g cap[g] x[g] >= 1, costs in cost units) on which HiGHS 1.12 prints its
# "transformNewIntegerFeasibleSolution" debug line with printf while solving to optimality.
HIGHS_PRINTS = """
import numpy as np
from scipy import sparse
from service.domain.solver.highs import MilpModel, solve_milp

row = [0.3926588138458003, 0.7853176276916006, 3.1412705107664025, 0.1013698104283571,
       0.21104514746120573, 0.1275269902223882, 0.012102631407786255]
model = MilpModel(
    np.array([699000.0, 1378000.0, 5352000.0, 229000.0, 658000.0, 399000.0, 154000.0]),
    sparse.csc_array(np.array([row])),
    np.array([1.0]),
    np.array([np.inf]),
    np.zeros(7),
    np.array([1.0, 2.0, 1.0, 10.0, 5.0, 8.0, 83.0]),
    np.ones(7, dtype=np.int64),
)
result = solve_milp(model, time_limit_s=2.0, known_value=2097000.0)
print("objective", round(result.objective))
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_a_write_to_descriptor_1_is_dropped_and_prints_still_arrive() -> None:
    diverted = _run(
        """
        import os
        from service.native_stdout import divert_native_stdout
        assert divert_native_stdout() and divert_native_stdout()  # once, then a no-op
        os.write(1, b"native\\n")
        print("python")
        """
    )
    plain = _run('import os; os.write(1, b"native\\n"); print("python")')
    assert plain.stdout == "native\npython\n"
    assert diverted.stdout == "python\n"


def test_helper_processes_inherit_the_diverted_descriptor() -> None:
    out = _run(
        """
        import os
        import multiprocessing
        from service.native_stdout import divert_native_stdout

        if __name__ == "__main__":
            divert_native_stdout()
            context = multiprocessing.get_context("forkserver")
            p = context.Process(target=os.write, args=(1, b"from the helper\\n"))
            p.start(); p.join()
            print("exit", p.exitcode)
        """
    )
    assert out.stdout == "exit 0\n"


def test_a_solve_that_makes_highs_print_leaves_only_the_answer_on_stdout() -> None:
    out = _run("from service.native_stdout import divert_native_stdout\n"
               "divert_native_stdout()\n" + HIGHS_PRINTS)  # fmt: skip
    assert out.stdout == "objective 1990000\n"


def test_the_command_line_entry_point_diverts_before_any_command() -> None:
    out = _run(
        """
        import os, sys
        from service import cli
        sys.argv = ["gpuplan", "--version"]
        os.write(1, b"before\\n")
        try:
            cli.entry()
        except SystemExit:
            pass
        os.write(1, b"after\\n")
        """
    )
    assert out.stdout.startswith("before\ngpuplan, version ")
    assert "after" not in out.stdout


def test_a_captured_stdout_is_left_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """Under a test runner's capture (no descriptor 1 behind ``sys.stdout``) nothing moves."""
    before = sys.stdout
    assert divert_native_stdout() is False
    assert sys.stdout is before
    print("captured")
    assert capsys.readouterr().out == "captured\n"
