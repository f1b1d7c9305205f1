"""How commands end (cli/render.py): every command says a usage or configuration error the
same way, and the commands that run agents print what a run left the same way."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from subagents.cli.app import build_app
from subagents.cli.render import Ending, print_ending
from subagents.redaction import Redactor

SECRET = "tok-4c1d9e7f2a6b8d3e"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["run", "--permission-mode", "bogus", "hi"], "Unknown permission mode 'bogus'"),
        (["resume", "abcd1234", "--permission-mode", "bogus"], "Unknown permission mode"),
        (["workflow", "run", "review", "--permission-mode", "bogus"], "Unknown permission mode"),
        (["chat", "--continue", "--resume", "abcd1234"], "do not go together"),
        (["run", "--wait", "hi"], "--wait goes with --remote"),
        (["workflow", "run", "review", "--ui", "--json"], "do not go together"),
        (["tasks", "show", "abcd1234", "--store", "{missing}"], "no store"),
    ],
)
def test_every_command_says_an_error_the_one_way(
    argv: list[str], said: str, tmp_path: Path
) -> None:
    argv = [part.format(missing=tmp_path / "none.db") for part in argv]
    result = CliRunner().invoke(build_app(), argv)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: ") and said in lines[0], result.stderr
    assert lines[1].startswith("hint: "), result.stderr
    assert "Traceback" not in result.output and "[red]" not in result.stderr


def ended(ending: Ending, *, as_json: bool = False) -> tuple[int, str, str]:
    """Print ``ending`` as a command does: its exit code, stdout and stderr."""
    err = io.StringIO()
    console = Console(file=err, width=100, emoji=False)
    payload = {"task_id": ending.task_id, "status": ending.status, "output": ending.output}
    runner_out = io.StringIO()
    code = 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdout", runner_out)
        try:
            print_ending(
                ending,
                console,
                Redactor([SECRET]),
                as_json=as_json,
                payload=payload,
                how_to_resume="resume with: subagents resume t-1 --approve",
            )
        except typer.Exit as exit_:
            code = exit_.exit_code
    return code, runner_out.getvalue(), err.getvalue()


def test_a_completed_run_prints_its_answer_redacted_and_exits_0() -> None:
    code, out, err = ended(Ending("t-1", "completed", f"the key is {SECRET}", None, None))
    assert code == 0
    assert SECRET not in out and "the key is" in out
    assert "task t-1" in err


def test_a_paused_run_says_what_it_waits_for_and_how_to_go_on_and_exits_3() -> None:
    code, out, err = ended(Ending("t-1", "awaiting_human", "", None, "Write NOTES.md?"))
    assert code == 3 and out == ""
    assert "Waiting for a person: Write NOTES.md?" in err
    assert "resume with: subagents resume t-1 --approve" in err


def test_a_paused_run_whose_question_is_elsewhere_still_says_how_to_go_on() -> None:
    code, _, err = ended(Ending("t-1", "awaiting_human", "", None, None))
    assert code == 3 and "Waiting for a person\n" in err and "subagents resume t-1" in err


def test_a_failed_run_says_why_and_exits_1() -> None:
    code, _, err = ended(Ending("t-1", "failed", "", f"bad key {SECRET}", None))
    assert code == 1 and "Run failed: bad key" in err and SECRET not in err


def test_json_prints_the_payload_alone_redacted() -> None:
    code, out, err = ended(Ending("t-1", "completed", SECRET, None, None), as_json=True)
    assert code == 0 and err == ""
    assert json.loads(out) == {"task_id": "t-1", "status": "completed", "output": "[REDACTED]"}
