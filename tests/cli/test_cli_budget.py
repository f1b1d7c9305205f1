"""`run --max-budget-tokens` / `--max-budget-usd` and `resume` with the real console script and a
local OpenAI-compatible server that reports usage (18 tokens a call): the run stops at its
budget with exit code 4, says what it spent and how to go on, and goes on with more."""

from __future__ import annotations

import pytest

from cli_project import MODEL, Project, ScriptedServer, project, server

pytestmark = pytest.mark.slow  # real subprocesses: not in `make test-fast`

__all__ = ["project", "server"]  # the fixtures, used by name below

PER_CALL = 18  # what fakes.openai_server.usage() reports: 11 in, 7 out


def test_a_run_stops_at_its_budget_and_a_resume_with_more_goes_on(
    project: Project, server: ScriptedServer
) -> None:
    (project.root / "notes.md").write_text("notes\n")
    for index in range(5):
        server.call("Read", {"file_path": "notes.md"}, call_id=f"call_{index}")
    server.say("Read them all.")

    stopped = project.cli("run", "Read the notes five times", "--model", MODEL,
                          "--max-budget-tokens", "40")  # fmt: skip

    assert stopped.code == 4, stopped.err
    assert len(server.requests) == 3  # 18, 36, 54: no call once 40 was spent
    assert f"task {stopped.task_id} · 54 tokens" in stopped.said  # what the whole task used
    assert "Budget reached" in stopped.said and "54 of 40 tokens (main 54)" in stopped.said
    task_id = stopped.task_id
    assert f"subagents resume {task_id} --max-budget-tokens" in stopped.said

    shown = project.cli("tasks", "show", task_id[:8])
    assert shown.code == 0 and '"kind": "budget"' in shown.out, shown.err
    assert f"Go on with: subagents resume {task_id[:8]} --max-budget-tokens" in shown.out

    again = project.cli("resume", task_id[:8])
    assert again.code == 2 and "leaves no room" in again.err and len(server.requests) == 3

    done = project.cli("resume", task_id[:8], "--max-budget-tokens", "1000", "--json")
    assert done.code == 0, done.err
    assert done.json()["output"] == "Read them all."
    assert done.json()["task_usage"]["input_tokens"] == 6 * 11  # the whole task, both runs
    assert len(server.requests) == 6  # the three turns left, none again
    report = project.show(task_id)
    used = [s["usage"]["input_tokens"] + s["usage"]["output_tokens"] for s in report["sessions"]]
    assert sum(used) == 6 * PER_CALL
    # a model the price table does not know: its cost is unknown, not guessed
    assert report["usage"]["cost_known"] is False and report["usage"]["cost_usd"] == 0
    config = project.root / ".subagents" / "config.toml"
    config.write_text(  # $1 an input token, $2 an output token: 11 + 14 a call
        config.read_text()
        + f'\n[prices."{MODEL}"]\ninput_per_mtok = 1000000\noutput_per_mtok = 2000000\n'
    )
    priced = project.show(task_id)["usage"]
    assert (priced["cost_usd"], priced["cost_known"]) == (6 * 25.0, True)
    assert "108 tokens, $150.0000" in project.cli("tasks", "show", task_id[:8]).out


def test_a_budget_in_usd_stops_the_run_and_a_resume_with_more_goes_on(
    project: Project, server: ScriptedServer
) -> None:
    config = project.root / ".subagents" / "config.toml"
    config.write_text(  # $1 an input token, $2 an output token: $25 a call
        config.read_text()
        + f'\n[prices."{MODEL}"]\ninput_per_mtok = 1000000\noutput_per_mtok = 2000000\n'
    )
    (project.root / "notes.md").write_text("notes\n")
    for index in range(3):
        server.call("Read", {"file_path": "notes.md"}, call_id=f"call_{index}")
    server.say("Read them all.")

    stopped = project.cli("run", "Read the notes", "--model", MODEL, "--max-budget-usd", "40")

    assert stopped.code == 4, stopped.err
    assert len(server.requests) == 2  # $25, $50: no call once $40 was spent
    assert "36 tokens, $50.0000 of $40.0000 (main 36)" in stopped.said
    assert f"subagents resume {stopped.task_id} --max-budget-usd 100.00" in stopped.said

    done = project.cli("resume", stopped.task_id[:8], "--max-budget-usd", "500")
    assert done.code == 0, done.err
    assert len(server.requests) == 4 and "Read them all." in done.out
