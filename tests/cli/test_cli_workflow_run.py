"""`subagents workflow run` and `subagents resume` of a workflow task, from the command line,
against a real local OpenAI-compatible server through the openai SDK."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fakes.openai_server import FakeOpenAIServer
from paths import REPO
from subagents.cli.app import app
from subagents.store.open import open_store

EXAMPLE = REPO / "examples" / "workflow-project"
MODEL = "openai:fake-model"
BUG = "sum(line.price_cents for line in self.lines)"
FIX = "sum(line.price_cents * line.quantity for line in self.lines)"
runner = CliRunner()


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def project(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    root = tmp_path / "project"
    shutil.copytree(EXAMPLE, root)
    (root / ".git").mkdir()
    (root / ".subagents" / "config.toml").write_text(
        f'[providers.openai]\nbase_url = "{server.base_url}"\nmax_retries = 0\n'
        'tool_calls = "auto"\n'
    )
    return root


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, " ".join(result.stderr.split())


def test_a_reflection_workflow_runs_to_the_critics_approval(
    project: Path, server: FakeOpenAIServer
) -> None:
    server.reply_text("Cart.total_cents() returns the total.")
    server.reply_text("Add an example.")
    server.reply_text("Cart.total_cents() sums price times quantity. Example: 3 x 50.")
    server.reply_text("APPROVED")
    code, out, err = invoke(
        "workflow", "run", "draft-critique", "--input", "src/shop/cart.py",
        "--model", MODEL, "--cwd", str(project), "--json",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    assert payload["status"] == "completed"
    assert payload["path"] == ["draft", "critique", "approved"] * 2
    assert payload["state"]["critique"] == "APPROVED"
    assert "Example:" in payload["state"]["draft"]
    # the second draft was asked with the critique of the first
    writer_prompts = [
        m["content"]
        for request in server.requests[2:3]
        for m in request.json()["messages"]
        if m["role"] == "user"
    ]
    assert any("Add an example." in p for p in writer_prompts)


@pytest.mark.slow
def test_a_checkpoint_pauses_the_command_and_resume_approve_finishes_it(
    project: Path, server: FakeOpenAIServer
) -> None:
    server.reply_tool_calls([("c1", "Read", json.dumps({"file_path": "src/shop/cart.py"}))])
    server.reply_text("src/shop/cart.py:25: total_cents ignores quantity.")
    code, out, err = invoke(
        "workflow", "run", "review-fix-verify", "--input", "src/shop/cart.py",
        "--model", MODEL, "--cwd", str(project), "--permission-mode", "bypassPermissions",
    )  # fmt: skip
    assert code == 3, err  # paused for a person
    assert "◆ review" in err and "review → fix" in err
    assert "Waiting for a person: Run node 'fix'" in err
    task_id = err.split("task ")[-1].split()[0]
    assert BUG in (project / "src" / "shop" / "cart.py").read_text()

    edit = {"file_path": "src/shop/cart.py", "old_string": BUG, "new_string": FIX}
    server.reply_tool_calls([("c2", "Edit", json.dumps(edit))])
    server.reply_text("fixed")
    check = (
        "python3 -c \"import sys; sys.path.insert(0, 'src'); from shop.cart import Cart; "
        "c = Cart(); c.add('a', 50, 3); c.add('p', 70); print('total', c.total_cents())\""
    )
    server.reply_tool_calls([("c3", "Bash", json.dumps({"command": check}))])
    server.reply_text("total 220\nPASS")
    code, out, err = invoke("resume", task_id, "--approve", "--cwd", str(project))
    assert code == 0, err
    assert out.strip().endswith("PASS")
    assert FIX in (project / "src" / "shop" / "cart.py").read_text()
    with open_store(cwd=project) as store:
        task = store.get_task(task_id)
        assert task.status == "completed"
        bash = [m for r in server.requests for m in r.json()["messages"] if m["role"] == "tool"]
        assert any("total 220" in str(m["content"]) for m in bash)  # Bash really ran it
    # the trace shows the path through the graph and the decision that let it go on
    code, out, err = invoke("trace", task_id, "--json", "--cwd", str(project))
    assert code == 0, err
    path = json.loads(out)["workflow_path"]
    assert [step.get("node") or step["decision"].split(" ")[0] for step in path] == [
        "review",
        "approve",
        "fix",
        "verify",
    ]
    code, out, err = invoke("trace", task_id, "--cwd", str(project))
    assert "path: review -> [approve] -> fix -> verify" in out
    assert "node fix: fixer" in out
    code, out, err = invoke("tasks", "show", task_id, "--cwd", str(project))
    assert "workflow:review-fix-verify" in out


def test_an_invalid_workflow_is_not_run_and_says_where(project: Path) -> None:
    path = project / ".subagents" / "workflows" / "broken.yaml"
    path.write_text("name: broken\nentry_point: start\nnodes:\n  a: {type: agent, agent: nobody}\n")
    code, _out, err = invoke("workflow", "run", "broken", "--model", MODEL, "--cwd", str(project))
    assert code == 1
    assert "entry_point" in err and "nodes.a.agent" in err
    assert "Not run" in err
