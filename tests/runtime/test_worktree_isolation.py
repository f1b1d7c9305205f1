"""isolation: worktree: a subagent works in a git worktree of its own, kept only if it changed.

Every test runs real git on real repositories in tmp_path and drives the real Runtime with
scripted models; the subagents' file tools and Bash do the writing.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.runtime import Runtime
from subagents.runtime.worktree import Worktree, enter_worktree, leave_worktree
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, ScriptedModel, tool_call_response, tool_calls_response

GIT_USER = ["-c", "user.email=test@example.com", "-c", "user.name=Test"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *GIT_USER, *args], cwd=repo, capture_output=True, text=True, check=True
    )
    return done.stdout


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hello\n")
    (path / ".gitignore").write_text("*.log\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")
    return path


def isolated(name: str = "builder", **fields: Any) -> AgentDefinition:
    fields.setdefault("description", f"The {name} specialist.")
    fields.setdefault("system_prompt", f"You are {name}.")
    return AgentDefinition(name=name, isolation="worktree", **fields)


def task(subagent_type: str, prompt: str = "do it") -> dict[str, Any]:
    return {"description": f"run {subagent_type}", "prompt": prompt, "subagent_type": subagent_type}


def runtime(repo: Path, main: Any, *agents: AgentDefinition, **kwargs: Any) -> Runtime:
    return Runtime(
        cwd=repo, agents=agents, model=main, permission_mode="bypassPermissions", **kwargs
    )


def task_results(model: ScriptedModel | FunctionModel) -> list[ToolResultMessage]:
    return [m for m in model.requests[-1].messages if isinstance(m, ToolResultMessage)]


def worktrees(repo: Path) -> list[str]:
    return [
        line.removeprefix("worktree ")
        for line in git(repo, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]


def branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--format=%(refname:short)").split()


def read(path: Path) -> str:
    return path.read_text()


def exists(path: Path) -> bool:
    return path.exists()


KEPT = re.compile(r"path: (\S+)\n\s+branch: (\S+)")


async def test_a_subagent_that_changes_nothing_leaves_no_worktree_or_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    child = ScriptedModel([tool_call_response("Bash", {"command": "pwd; cat README.md"}), "read"])
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    rt = runtime(repo, main, isolated(), agent_models={"builder": child})

    result = await rt.run("look around")

    assert result.output == "done"
    # it ran in a worktree of its own, not in the project
    bash_output = next(
        m.content for m in child.requests[1].messages if isinstance(m, ToolResultMessage)
    )
    where = bash_output.splitlines()[0]
    assert where != str(repo.resolve()) and "/.git/subagents/worktrees/builder-" in where
    assert "hello" in bash_output
    assert f"Working directory: {where}" in child.requests[0].system
    assert "isolated git worktree" in child.requests[0].system
    # and both the worktree and its branch are gone
    assert worktrees(repo) == [str(repo.resolve())]
    assert branches(repo) == ["main"]
    assert not exists(Path(where))
    (returned,) = task_results(main)
    assert "changed nothing there; the worktree and its branch were removed" in returned.content
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert spawn.worktree_path is None and spawn.worktree_branch is None
    assert git(repo, "status", "--porcelain") == ""


async def test_a_subagent_that_writes_keeps_its_worktree_and_says_where(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    child = ScriptedModel(
        [tool_call_response("Write", {"file_path": "new.txt", "content": "from child\n"}), "ok"]
    )
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    rt = runtime(repo, main, isolated(), agent_models={"builder": child})

    await rt.run("write something")

    (returned,) = task_results(main)
    match = KEPT.search(returned.content)
    assert match is not None, returned.content
    path, branch = Path(match.group(1)), match.group(2)
    assert "1 changed or new file" in returned.content
    assert (path / "new.txt").read_text() == "from child\n"
    assert not (repo / "new.txt").exists()  # the project's checkout is untouched
    assert git(repo, "status", "--porcelain") == ""
    assert branch.startswith("subagents/builder-") and branch in branches(repo)
    assert str(path) in worktrees(repo)
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert (spawn.worktree_path, spawn.worktree_branch) == (str(path), branch)
    assert spawn.to_dict()["worktree_branch"] == branch


async def test_two_parallel_subagents_writing_the_same_file_do_not_collide(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    both_started = asyncio.Event()
    started: list[str] = []

    def writer(text: str) -> FunctionModel:
        async def turn(request: ModelRequest) -> ModelResponse | str:
            if len(request.messages) == 1:
                started.append(text)
                if len(started) == 2:
                    both_started.set()
                await both_started.wait()  # both are in their worktrees before either writes
                return tool_call_response("Write", {"file_path": "README.md", "content": text})
            return f"wrote {text!r}"

        return FunctionModel(turn, name=f"test:{text}")

    main = ScriptedModel(
        [tool_calls_response([("Task", task("alpha")), ("Task", task("beta"))]), "done"]
    )
    rt = runtime(
        repo,
        main,
        isolated("alpha"),
        isolated("beta"),
        agent_models={"alpha": writer("alpha version\n"), "beta": writer("beta version\n")},
    )

    await rt.run("both at once")

    kept = {}
    for returned in task_results(main):
        match = KEPT.search(returned.content)
        assert match is not None, returned.content
        kept[match.group(2)] = Path(match.group(1))
    assert len(kept) == 2
    contents = {
        branch.split("/")[1].split("-")[0]: (path / "README.md").read_text()
        for branch, path in kept.items()
    }
    assert contents == {"alpha": "alpha version\n", "beta": "beta version\n"}
    assert (repo / "README.md").read_text() == "hello\n"
    assert len(worktrees(repo)) == 3


async def test_outside_a_git_repository_the_parent_gets_a_clear_tool_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    child = ScriptedModel([])
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    rt = runtime(plain, main, isolated(), agent_models={"builder": child})

    await rt.run("go")

    (returned,) = task_results(main)
    assert returned.is_error
    assert "cannot start 'builder'" in returned.content
    assert "needs a git repository" in returned.content
    assert "remove `isolation: worktree`" in returned.content
    assert child.requests == []  # the subagent never started
    assert rt.last_delegation.handles == {}  # type: ignore[union-attr]


async def test_a_repository_without_a_commit_is_refused_with_what_to_do(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q")
    child = ScriptedModel([])
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    rt = runtime(repo, main, isolated(), agent_models={"builder": child})

    await rt.run("go")

    (returned,) = task_results(main)
    assert returned.is_error and "has no commit yet" in returned.content
    assert "commit once" in returned.content
    assert child.requests == []


async def test_a_commit_alone_keeps_the_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    command = (
        "echo change >> README.md && git add README.md && "
        "git -c user.email=c@example.com -c user.name=Child commit -q -m 'child change'"
    )
    child = ScriptedModel([tool_call_response("Bash", {"command": command}), "committed"])
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    rt = runtime(repo, main, isolated(), agent_models={"builder": child})

    await rt.run("commit something")

    (returned,) = task_results(main)
    assert "1 new commit" in returned.content and "changed or new file" not in returned.content
    match = KEPT.search(returned.content)
    assert match is not None
    assert git(repo, "log", "-1", "--format=%s", match.group(2)).strip() == "child change"
    assert git(repo, "log", "-1", "--format=%s", "main").strip() == "init"


async def test_uncommitted_changes_of_the_checkout_are_not_copied_and_that_is_said(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "README.md").write_text("edited, not committed\n")
    (repo / "draft.txt").write_text("untracked\n")
    child = ScriptedModel([tool_call_response("Read", {"file_path": "README.md"}), "read it"])
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    rt = runtime(repo, main, isolated(), agent_models={"builder": child})

    await rt.run("go")

    read = next(m for m in child.requests[1].messages if isinstance(m, ToolResultMessage))
    assert "hello" in read.content and "edited" not in read.content
    assert "2 uncommitted change(s) that are not in this worktree" in child.requests[0].system
    (returned,) = task_results(main)
    assert "2 uncommitted change(s) that were not copied" in returned.content
    assert (repo / "README.md").read_text() == "edited, not committed\n"


async def test_the_kept_worktree_is_in_the_trace(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from subagents.cli.trace import render_tree
    from subagents.tracing.view import build_trace

    repo = make_repo(tmp_path / "repo")
    child = ScriptedModel(
        [tool_call_response("Write", {"file_path": "a.txt", "content": "a\n"}), "ok"]
    )
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    with open_store(tmp_path / "state.db") as store:
        rt = runtime(repo, main, isolated(), agent_models={"builder": child}, store=store)
        result = await rt.run("go")
        assert result.task_id is not None
        traces = [t for t in store.traces(result.task_id) if t.step_name == "worktree_kept"]
        tree = render_tree(build_trace(store, result.task_id))
    (trace,) = traces
    assert trace.agent == "builder" and trace.status == "info"
    assert trace.data["worktree_branch"].startswith("subagents/builder-")
    assert read(Path(trace.data["worktree_path"], "a.txt")) == "a\n"
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(tree)
    assert (
        f"worktree kept: {trace.data['worktree_path']} (branch {trace.data['worktree_branch']})"
        in out.getvalue()
    )


async def test_a_cancelled_subagent_with_changes_keeps_its_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    wrote = asyncio.Event()
    never = asyncio.Event()

    async def child_turn(request: ModelRequest) -> ModelResponse | str:
        if len(request.messages) == 1:
            return tool_call_response("Write", {"file_path": "half.txt", "content": "half\n"})
        wrote.set()
        await never.wait()  # works "forever" until cancelled
        return "unreachable"

    async def main_turn(request: ModelRequest) -> ModelResponse | str:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            return tool_call_response("Task", {**task("builder"), "run_in_background": True})
        if len(results) == 1:
            await wrote.wait()
            agent_id = re.search(r"agent_id (\S+)\.", results[0].content)
            assert agent_id is not None
            return tool_call_response("TaskCancel", {"agent_id": agent_id.group(1)})
        return "stopped it"

    main = FunctionModel(main_turn)
    rt = runtime(repo, main, isolated(), agent_models={"builder": FunctionModel(child_turn)})

    await rt.run("start and stop")

    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert spawn.status == "cancelled"
    assert spawn.worktree_path is not None
    cancelled = task_results(main)[-1]
    assert cancelled.content.startswith(f"Subagent {spawn.agent_id} cancelled.")
    assert f"path: {spawn.worktree_path}" in cancelled.content
    assert read(Path(spawn.worktree_path, "half.txt")) == "half\n"
    assert spawn.worktree_branch in branches(repo)


async def test_resuming_after_a_kept_worktree_continues_in_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    child = ScriptedModel(
        [
            tool_call_response("Write", {"file_path": "one.txt", "content": "1\n"}),
            "first",
            tool_call_response("Bash", {"command": "ls"}),
            "second",
        ]
    )

    def main_turn(request: ModelRequest) -> ModelResponse | str:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            return tool_call_response("Task", task("builder"))
        if len(results) == 1:
            agent_id = re.search(r'resume="([^"]+)"', results[0].content)
            assert agent_id is not None
            return tool_call_response("Task", {**task("builder"), "resume": agent_id.group(1)})
        return "done"

    main = FunctionModel(main_turn)
    rt = runtime(repo, main, isolated(), agent_models={"builder": child})

    await rt.run("twice")

    listing = next(
        m.content for m in child.requests[3].messages[-1:] if isinstance(m, ToolResultMessage)
    )
    assert "one.txt" in listing  # the second run saw the first run's file
    paths = {KEPT.search(m.content).group(1) for m in task_results(main)}  # type: ignore[union-attr]
    assert len(paths) == 1


async def test_leave_never_removes_a_worktree_that_changed_after_the_check(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    worktree = await enter_worktree(repo, agent_name="x", session_id="s1")
    (worktree.path / "late.txt").write_text("late\n")
    outcome = await leave_worktree(worktree)
    assert outcome.kept and (worktree.path / "late.txt").exists()
    # a worktree whose record is gone keeps its branch even once clean
    (worktree.path / "late.txt").unlink()
    taken_over = Worktree(worktree.repository, worktree.path, worktree.branch, None)
    outcome = await leave_worktree(taken_over)
    assert outcome.kept and worktree.branch in branches(repo)


async def test_ignored_files_do_not_count_as_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    worktree = await enter_worktree(repo, agent_name="x", session_id="s2")
    (worktree.path / "build.log").write_text("noise\n")
    outcome = await leave_worktree(worktree)
    assert not outcome.kept and not worktree.path.exists()
    assert branches(repo) == ["main"]


async def test_a_workspace_in_a_subfolder_works_in_the_same_subfolder(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pkg")
    worktree = await enter_worktree(repo / "pkg", agent_name="x", session_id="s3")
    assert worktree.workspace == worktree.path / "pkg"
    assert (worktree.workspace / "mod.py").read_text() == "x = 1\n"
    assert not (await leave_worktree(worktree)).kept


@pytest.mark.parametrize("name", ["../../escape", "a b/c", ""])
async def test_agent_names_never_leave_the_worktrees_folder(tmp_path: Path, name: str) -> None:
    repo = make_repo(tmp_path / "repo")
    worktree = await enter_worktree(repo, agent_name=name, session_id="s4")
    assert worktree.path.parent == (repo / ".git" / "subagents" / "worktrees").resolve()
    assert not (await leave_worktree(worktree)).kept


async def test_the_progress_output_names_a_kept_worktree(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from subagents.cli.ui.progress import ProgressPrinter
    from subagents.redaction import Redactor
    from subagents.runtime.events import EventBus

    repo = make_repo(tmp_path / "repo")
    out = io.StringIO()
    printer = ProgressPrinter(Console(file=out, width=300, color_system=None), Redactor(()))
    child = ScriptedModel(
        [tool_call_response("Write", {"file_path": "b.txt", "content": "b\n"}), "ok"]
    )
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    rt = runtime(
        repo, main, isolated(), agent_models={"builder": child}, events=EventBus([printer])
    )
    await rt.run("go")
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert f"its worktree is kept: {spawn.worktree_path} (branch {spawn.worktree_branch})" in (
        out.getvalue()
    )


async def test_a_run_stopped_and_resumed_continues_in_the_same_worktree(tmp_path: Path) -> None:
    from subagents.runtime.pause import HumanDecision

    repo = make_repo(tmp_path / "repo")
    store_path = tmp_path / "state.db"
    first_child = ScriptedModel(
        [
            tool_call_response("Write", {"file_path": "a.txt", "content": "before\n"}),
            tool_call_response("AskHuman", {"question": "Keep going?"}),
        ]
    )
    first_main = ScriptedModel([tool_call_response("Task", task("builder"))])
    with open_store(store_path) as store:
        paused = await runtime(
            repo, first_main, isolated(), agent_models={"builder": first_child}, store=store
        ).run("start")
    assert paused.status == "awaiting_human" and paused.task_id is not None
    (kept,) = [path for path in worktrees(repo) if path != str(repo.resolve())]

    # a new process: new runtime, new models, the same store and repository
    second_child = ScriptedModel(
        [tool_call_response("Write", {"file_path": "b.txt", "content": "after\n"}), "finished"]
    )
    second_main = ScriptedModel(["done"])
    with open_store(store_path) as store:
        rt = runtime(
            repo, second_main, isolated(), agent_models={"builder": second_child}, store=store
        )
        done = await rt.resume(paused.task_id, HumanDecision("approve", values={"answer": "y"}))

    assert done.status == "completed" and done.output == "done"
    assert read(Path(kept, "a.txt")) == "before\n" and read(Path(kept, "b.txt")) == "after\n"
    assert not exists(repo / "a.txt") and not exists(repo / "b.txt")
    (returned,) = task_results(second_main)
    match = KEPT.search(returned.content)
    assert match is not None and match.group(1) == kept


async def test_a_subagent_of_an_isolated_subagent_resumes_in_its_worktree(tmp_path: Path) -> None:
    from subagents.runtime.pause import HumanDecision

    repo = make_repo(tmp_path / "repo")
    store_path = tmp_path / "state.db"
    helper = AgentDefinition(name="helper", description="h", system_prompt="h")
    first = {
        "builder": ScriptedModel([tool_call_response("Task", task("helper"))]),
        "helper": ScriptedModel(
            [
                tool_call_response("Write", {"file_path": "h1.txt", "content": "1\n"}),
                tool_call_response("AskHuman", {"question": "Go on?"}),
            ]
        ),
    }
    with open_store(store_path) as store:
        paused = await runtime(
            repo,
            ScriptedModel([tool_call_response("Task", task("builder"))]),
            isolated(),
            helper,
            agent_models=first,
            store=store,
        ).run("start")
    assert paused.status == "awaiting_human" and paused.task_id is not None
    (kept,) = [path for path in worktrees(repo) if path != str(repo.resolve())]
    assert read(Path(kept, "h1.txt")) == "1\n"

    second = {
        "builder": ScriptedModel(["built"]),
        "helper": ScriptedModel(
            [tool_call_response("Write", {"file_path": "h2.txt", "content": "2\n"}), "helped"]
        ),
    }
    with open_store(store_path) as store:
        rt = runtime(
            repo, ScriptedModel(["done"]), isolated(), helper, agent_models=second, store=store
        )
        done = await rt.resume(paused.task_id, HumanDecision("approve", values={"answer": "y"}))

    assert done.status == "completed"
    assert read(Path(kept, "h2.txt")) == "2\n"
    assert not exists(repo / "h1.txt") and not exists(repo / "h2.txt")


async def test_a_deleted_worktree_folder_loses_no_commits(tmp_path: Path) -> None:
    import shutil

    repo = make_repo(tmp_path / "repo")
    untouched = await enter_worktree(repo, agent_name="x", session_id="gone-1")
    shutil.rmtree(untouched.path)
    outcome = await leave_worktree(untouched)
    assert not outcome.kept and outcome.problem == "its folder was deleted during the run"
    assert untouched.branch not in branches(repo)

    committed = await enter_worktree(repo, agent_name="x", session_id="gone-2")
    (committed.path / "c.txt").write_text("c\n")
    git(committed.path, "add", "c.txt")
    git(committed.path, "commit", "-q", "-m", "work")
    shutil.rmtree(committed.path)
    outcome = await leave_worktree(committed)
    assert outcome.kept and committed.branch in branches(repo)
    assert git(repo, "show", f"{committed.branch}:c.txt") == "c\n"
    assert worktrees(repo) == [str(repo.resolve())]  # pruned


async def test_protected_paths_are_those_of_the_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    child = ScriptedModel(
        [
            tool_call_response(
                "Write", {"file_path": ".claude/agents/evil.md", "content": "---\n"}
            ),
            tool_call_response("Write", {"file_path": "src/ok.py", "content": "x = 1\n"}),
            "tried",
        ]
    )
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    rt = runtime(repo, main, isolated(), agent_models={"builder": child})

    await rt.run("go")

    refused, written = [m for m in child.requests[2].messages if isinstance(m, ToolResultMessage)]
    assert refused.is_error and ".claude is protected" in refused.content
    assert ".git is protected" not in refused.content
    assert not written.is_error
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert spawn.worktree_path is not None
    assert read(Path(spawn.worktree_path, "src", "ok.py")) == "x = 1\n"
    assert not exists(Path(spawn.worktree_path, ".claude", "agents", "evil.md"))


def test_the_sandbox_of_an_isolated_subagent_writes_only_its_worktree(tmp_path: Path) -> None:
    from subagents.runtime.worktree import rooted_sandbox
    from subagents.tools.sandbox import BashSandbox

    project = tmp_path / "project"
    worktree = project / ".git" / "subagents" / "worktrees" / "w-1"
    worktree.mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: somewhere\n")
    rooted = rooted_sandbox(BashSandbox.for_workspace(project, network=True), worktree)
    assert rooted is not None and rooted.network is True
    argv = rooted.wrap(["true"])
    binds = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--bind"]
    assert binds == [str(worktree.resolve())]
    read_only = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--ro-bind"]
    assert str((worktree / ".git").resolve()) in read_only
    assert rooted_sandbox(None, worktree) is None


@settings(max_examples=60, deadline=None)
@given(name=st.text(max_size=60), session_id=st.text(max_size=40))
def test_any_agent_name_gives_a_valid_branch_and_folder_name(name: str, session_id: str) -> None:
    from subagents.runtime.worktree import _worktree_name

    folder = _worktree_name(name, session_id)
    assert "/" not in folder and folder not in ("", ".", "..") and not folder.startswith(".")
    check = subprocess.run(
        ["git", "check-ref-format", "--branch", f"subagents/{folder}"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_a_damaged_worktree_record_never_lets_a_branch_be_deleted(data: bytes) -> None:
    import tempfile

    from subagents.runtime.worktree import _read_record, _record_path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "w-1"
        _record_path(path).write_bytes(data)
        base, uncommitted = _read_record(path)
    assert base is None or re.fullmatch(r"[0-9a-f]{40,64}", base)
    assert uncommitted >= 0


async def test_the_task_store_in_the_project_is_not_an_uncommitted_change(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    child = ScriptedModel(["nothing to do"])
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    with open_store(repo / ".subagents" / "state.db") as store:
        rt = runtime(repo, main, isolated(), agent_models={"builder": child}, store=store)
        await rt.run("go")
    assert "uncommitted" not in child.requests[0].system
    (returned,) = task_results(main)
    assert "uncommitted" not in returned.content
    assert "changed nothing there" in returned.content


async def test_without_git_the_parent_is_told_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    empty = tmp_path / "no-tools"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    child = ScriptedModel([])
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    rt = runtime(repo, main, isolated(), agent_models={"builder": child})

    await rt.run("go")

    (returned,) = task_results(main)
    assert returned.is_error and "needs git, which is not installed" in returned.content
    assert "install git" in returned.content
    assert child.requests == []


async def test_a_background_subagents_notification_names_its_kept_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    child = ScriptedModel(
        [tool_call_response("Write", {"file_path": "bg.txt", "content": "bg\n"}), "bg done"]
    )
    main = ScriptedModel(
        [
            tool_call_response("Task", {**task("builder"), "run_in_background": True}),
            "waiting",
            "saw it",
        ]
    )
    rt = runtime(repo, main, isolated(), agent_models={"builder": child})

    result = await rt.run("in the background")

    assert result.output == "saw it"
    notification = main.requests[-1].messages[-1]
    assert "<task-notification>" in notification.content
    match = KEPT.search(notification.content)
    assert match is not None
    assert read(Path(match.group(1), "bg.txt")) == "bg\n"


async def test_the_hooks_of_an_isolated_agent_run_in_its_worktree(tmp_path: Path) -> None:
    import shlex
    import sys

    repo = make_repo(tmp_path / "repo")
    log = tmp_path / "where.log"
    script = tmp_path / "where.py"
    script.write_text(
        "import json, os, sys\n"
        "payload = json.load(sys.stdin)\n"
        f"open({str(log)!r}, 'a').write(json.dumps([os.getcwd(), payload['cwd']]) + '\\n')\n"
    )
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    hooks = {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}
    child = ScriptedModel(
        [tool_call_response("Write", {"file_path": "w.txt", "content": "w\n"}), "ok"]
    )
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    rt = runtime(repo, main, isolated(hooks=hooks), agent_models={"builder": child})

    await rt.run("go")

    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    (line,) = read(log).splitlines()
    assert json.loads(line) == [spawn.worktree_path, spawn.worktree_path]


async def test_worktreeinclude_brings_ignored_files_but_not_uncommitted_work(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text("*.log\n.env\nlocal/\n")
    (repo / ".worktreeinclude").write_text(".env\nlocal/\ndraft.txt\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "include")
    (repo / ".env").write_text("TOKEN=abc\n")
    (repo / "local").mkdir()
    (repo / "local" / "settings.json").write_text("{}\n")
    (repo / "local" / "link").symlink_to("/etc/hostname")
    (repo / "debug.log").write_text("ignored but not included\n")
    (repo / "draft.txt").write_text("untracked, not ignored: uncommitted work\n")

    worktree = await enter_worktree(repo, agent_name="x", session_id="inc-1")

    assert read(worktree.path / ".env") == "TOKEN=abc\n"
    assert read(worktree.path / "local" / "settings.json") == "{}\n"
    assert (worktree.path / "local" / "link").is_symlink()  # copied as a link, not followed
    assert not exists(worktree.path / "debug.log")
    assert not exists(worktree.path / "draft.txt")
    assert "3 ignored file(s) listed in .worktreeinclude were copied in" in worktree.included
    # ignored files do not count as changes: nothing changed, so it goes
    assert not (await leave_worktree(worktree)).kept


async def test_without_worktreeinclude_no_ignored_file_is_copied(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "app.log").write_text("log\n")
    worktree = await enter_worktree(repo, agent_name="x", session_id="inc-2")
    assert not exists(worktree.path / "app.log") and worktree.included == ""
    assert not (await leave_worktree(worktree)).kept


async def test_two_parallel_runs_of_the_same_agent_get_a_worktree_each(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")

    def turn(request: ModelRequest) -> ModelResponse | str:
        prompt = request.messages[0].content
        if len(request.messages) == 1:
            return tool_call_response("Write", {"file_path": "README.md", "content": prompt})
        return "wrote"

    main = ScriptedModel(
        [
            tool_calls_response(
                [("Task", task("builder", "first\n")), ("Task", task("builder", "second\n"))]
            ),
            "done",
        ]
    )
    rt = runtime(repo, main, isolated(), agent_models={"builder": FunctionModel(turn)})

    await rt.run("twice at once")

    kept = [KEPT.search(m.content) for m in task_results(main)]
    assert all(kept)
    contents = sorted(read(Path(m.group(1), "README.md")) for m in kept if m)
    assert contents == ["first\n", "second\n"]
    assert len({m.group(2) for m in kept if m}) == 2
    assert read(repo / "README.md") == "hello\n"


def test_isolated_runs_in_successive_event_loops_share_no_lock(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for attempt in range(2):
        main = ScriptedModel(
            [tool_calls_response([("Task", task("alpha")), ("Task", task("beta"))]), "done"]
        )
        rt = runtime(
            repo,
            main,
            isolated("alpha"),
            isolated("beta"),
            agent_models={"alpha": ScriptedModel(["a"]), "beta": ScriptedModel(["b"])},
        )
        result = rt.run_sync(f"run {attempt}")  # each run_sync is a new event loop
        assert result.output == "done"
        assert all(not m.is_error for m in task_results(main))
    assert worktrees(repo) == [str(repo.resolve())]


async def test_the_live_block_of_the_subagent_names_its_kept_worktree(tmp_path: Path) -> None:
    from subagents.cli.ui.blocks import BlockTree
    from subagents.runtime.events import EventBus

    repo = make_repo(tmp_path / "repo")
    tree = BlockTree(prompt="go")
    child = ScriptedModel(
        [tool_call_response("Write", {"file_path": "u.txt", "content": "u\n"}), "made u"]
    )
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    rt = runtime(repo, main, isolated(), agent_models={"builder": child}, events=EventBus([tree]))
    await rt.run("go")
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    (block,) = [b for b in tree.ordered() if b.agent_type == "builder"]
    assert block.output == (
        f"made u\n\n(worktree kept: {spawn.worktree_path}, branch {spawn.worktree_branch})"
    )


async def test_a_project_in_a_subfolder_of_the_repository_works_there_in_the_worktree(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "app").mkdir()
    (repo / "app" / "main.py").write_text("print(1)\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app")
    child = ScriptedModel([tool_call_response("Bash", {"command": "pwd; ls"}), "seen"])
    main = ScriptedModel([tool_call_response("Task", task("builder")), "done"])
    rt = runtime(repo / "app", main, isolated(), agent_models={"builder": child})

    await rt.run("go")

    listing = next(m for m in child.requests[1].messages if isinstance(m, ToolResultMessage))
    where, files = listing.content.splitlines()[0], listing.content
    assert where.endswith("/app") and "/.git/subagents/worktrees/builder-" in where
    assert "main.py" in files


async def test_project_rooted_rules_hold_inside_the_worktree(tmp_path: Path) -> None:
    """``/path`` rules of .claude/settings.json are about the project's files: in a worktree
    they are about its copy, so isolation neither escapes a deny nor loses an allow."""
    repo = make_repo(tmp_path / "repo")
    settings = {"permissions": {"deny": ["Edit(/locked/**)"], "allow": ["Edit(/open/**)"]}}
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(json.dumps(settings))
    child = ScriptedModel(
        [
            tool_calls_response(
                [
                    ("Write", {"file_path": "locked/a.txt", "content": "no"}),
                    ("Write", {"file_path": "open/b.txt", "content": "yes"}),
                ]
            ),
            "done",
        ]
    )
    main = ScriptedModel([tool_call_response("Task", task("builder")), "ok"])
    rt = Runtime(
        cwd=repo,
        agents=[isolated(permission_mode="dontAsk")],
        model=main,
        agent_models={"builder": child},
    )
    await rt.run("go")
    locked, opened = task_results(child)
    assert locked.is_error and "Edit(/locked/**)" in locked.content
    assert not opened.is_error, opened.content
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert spawn.worktree_path is not None
    assert read(Path(spawn.worktree_path, "open", "b.txt")) == "yes"
    assert not exists(Path(spawn.worktree_path, "locked", "a.txt"))
