"""Agent suggestions: BM25 ranking, the standout rule, the offer before a run, the CLI."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from paths import REPO
from subagents.cli.app import app
from subagents.cli.suggest import offer_agent, suggest_command
from subagents.definitions import parse_agent_file
from subagents.definitions.model import AgentDefinition
from subagents.inventory import Inventory
from subagents.suggest import (
    STANDOUT_MIN_SCORE,
    STANDOUT_RATIO,
    Suggestion,
    rank_agents,
    standout,
    tokenize,
)

LABELLED = REPO / "bench" / "suggest" / "labelled.jsonl"
# Measured with bench/bench_suggest.py: top-3 89/94 = 94.7%, standout right 63/67 = 94.0%.
# The floors leave five and nine points for harmless churn; a real regression falls below.
TOP3_FLOOR = 0.89
STANDOUT_PRECISION_FLOOR = 0.85

runner = CliRunner()


def agent(name: str, description: str, **fields: object) -> AgentDefinition:
    return AgentDefinition(name=name, description=description, system_prompt="x", **fields)


AGENTS = [
    agent("code-reviewer", "Reviews code changes and pull requests for quality and bugs."),
    agent("kubernetes-specialist", "Deploys and troubleshoots Kubernetes clusters and pods."),
    agent("sql-pro", "Writes and optimises SQL queries and database schemas."),
    agent("technical-writer", "Writes documentation, guides and API references."),
    agent("data-scientist", "Analyses data and builds statistical models."),
]


# -- tokenising --------------------------------------------------------------------------------


def test_tokenize_lowercases_drops_stop_words_and_stems() -> None:
    stems = [stem for stem, _ in tokenize("Please help: the Tests are FAILING, tested twice")]
    assert stems == ["test", "fail", "test", "twic"]


def test_tokenize_keeps_the_typed_word_beside_the_stem() -> None:
    assert ("review", "reviewing") in tokenize("reviewing")


def test_tokenize_maps_common_spellings() -> None:
    stems = {stem for stem, _ in tokenize("C++ and C# on .NET, k8s, golang")}
    assert {"cpp", "csharp", "dotnet", "kubernet", "go"} <= stems


def test_tokenize_caps_the_input() -> None:
    assert len(tokenize("word " * 10_000)) == 2_000  # 10,000 chars of five-char words
    assert tokenize("abc def", limit=3) == [("abc", "abc")]


# -- ranking -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("please review my pull request", "code-reviewer"),
        ("pods keep crashing in the k8s cluster", "kubernetes-specialist"),
        ("this query is slow, fix the SQL", "sql-pro"),
        ("write docs for the API", "technical-writer"),
        ("build a statistical model of churn", "data-scientist"),
    ],
)
def test_the_obvious_agent_wins(prompt: str, expected: str) -> None:
    ranked = rank_agents(prompt, AGENTS)
    assert ranked[0].name == expected
    assert ranked[0].matched


def test_ranking_is_sorted_limited_and_reports_matched_words() -> None:
    ranked = rank_agents("write sql and docs and review code", AGENTS, limit=2)
    assert len(ranked) == 2
    assert ranked[0].score >= ranked[1].score
    everything = rank_agents("write sql and docs and review code", AGENTS, limit=10)
    assert {s.name for s in everything} == {"code-reviewer", "sql-pro", "technical-writer"}
    by_name = {s.name: s for s in everything}
    assert by_name["sql-pro"].matched == ("write", "sql")


def test_name_words_count_more_than_description_words() -> None:
    agents = [
        agent("security-auditor", "Audits systems."),
        agent("generalist", "Does security, more security work, and anything else."),
    ]
    assert rank_agents("security", agents)[0].name == "security-auditor"


def test_example_tags_are_stripped_but_their_words_kept() -> None:
    described = agent("helper", "Helps. <example>Context: user wants a migration</example>")
    ranked = rank_agents("migration", [described, *AGENTS])
    assert ranked[0].name == "helper"
    assert rank_agents("example", [described]) == []


def test_inactive_agents_never_appear() -> None:
    agents = [
        *AGENTS,
        agent("sql-disabled", "SQL queries SQL SQL.", disabled=True),
        agent("sql-invalid", "SQL queries SQL SQL.", validation_errors=["bad field"]),
    ]
    names = {s.name for s in rank_agents("sql queries", agents, limit=50)}
    assert names == {"sql-pro"}


def test_records_are_accepted_and_inactive_records_left_out(tmp_path: Path) -> None:
    folder = tmp_path / "repo" / ".claude" / "agents"
    folder.mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    (folder / "sql-pro.md").write_text(
        "---\nname: sql-pro\ndescription: Optimises SQL queries.\n---\nYou are.\n", "utf-8"
    )
    (folder / "broken.md").write_text("---\nname: broken\n---\nno description\n", "utf-8")
    inventory = Inventory.discover(tmp_path / "repo")
    assert "broken" in inventory.records
    ranked = rank_agents("sql queries broken", inventory.records.values())
    assert [s.name for s in ranked] == ["sql-pro"]


def test_no_agents_no_match_and_zero_limit_give_nothing() -> None:
    assert rank_agents("review code", []) == []
    assert rank_agents("zebra xylophone", AGENTS) == []
    assert rank_agents("review code", AGENTS, limit=0) == []


def test_the_index_is_rebuilt_when_the_definitions_change() -> None:
    before = rank_agents("terraform", AGENTS)
    after = rank_agents("terraform", [*AGENTS, agent("terraform-engineer", "IaC.")])
    assert before == []
    assert after[0].name == "terraform-engineer"


agent_names = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(
    prompt=st.text(max_size=300),
    descriptions=st.lists(st.text(max_size=200), max_size=4),
    names=st.lists(agent_names, max_size=4),
)
def test_odd_prompts_and_definitions_never_raise(
    prompt: str, descriptions: list[str], names: list[str]
) -> None:
    agents = [agent(n, d) for n, d in zip(names, descriptions, strict=False)]
    ranked = rank_agents(prompt, [*agents, *AGENTS], limit=3)
    assert len(ranked) <= 3
    assert all(s.score > 0 for s in ranked)
    standout(ranked)


@pytest.mark.parametrize(
    "prompt",
    ["", "   ", "\x00\x01", "<example>", "the and of", "🙂" * 100, "sql " * 1_000_000],
)
def test_empty_huge_and_odd_prompts_never_raise(prompt: str) -> None:
    ranked = rank_agents(prompt, AGENTS)
    assert all(isinstance(s, Suggestion) for s in ranked)


# -- standout ----------------------------------------------------------------------------------


def s(name: str, score: float) -> Suggestion:
    return Suggestion(name=name, score=score, matched=("x",))


def test_standout_needs_a_minimum_score() -> None:
    assert standout([]) is None
    assert standout([s("a", STANDOUT_MIN_SCORE - 0.01)]) is None
    assert standout([s("a", STANDOUT_MIN_SCORE)]) == s("a", STANDOUT_MIN_SCORE)


def test_standout_needs_a_clear_margin_over_the_second() -> None:
    high = STANDOUT_MIN_SCORE * 2
    assert standout([s("a", high), s("b", high / STANDOUT_RATIO)]) == s("a", high)
    assert standout([s("a", high), s("b", high / STANDOUT_RATIO + 0.01)]) is None
    assert standout([s("a", high), s("b", high)]) is None


def test_standout_on_real_rankings() -> None:
    ranked = rank_agents("kubernetes pods crashing in the cluster", AGENTS)
    chosen = standout(ranked)
    assert chosen is not None and chosen.name == "kubernetes-specialist"
    assert standout(rank_agents("sql on kubernetes", AGENTS)) is None  # a tie


# -- the offer before a run --------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    folder = repo / ".claude" / "agents"
    folder.mkdir(parents=True)
    for definition in AGENTS:
        (folder / f"{definition.name}.md").write_text(
            f"---\nname: {definition.name}\ndescription: {definition.description}\n---\nYou.\n",
            "utf-8",
        )
    return repo


class Asker:
    def __init__(self, answer: str | BaseException) -> None:
        self.answer = answer
        self.questions: list[str] = []

    def __call__(self, question: str) -> str:
        self.questions.append(question)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def quiet_console() -> Console:
    return Console(file=io.StringIO(), force_terminal=False)


@pytest.mark.parametrize(("answer", "chosen"), [("", True), ("y", True), (" YES ", True)])
def test_offer_returns_the_agent_on_yes(project: Path, answer: str, chosen: bool) -> None:
    ask = Asker(answer)
    name = offer_agent(quiet_console(), Inventory.discover(project), "k8s pods crashing", ask)
    assert name == "kubernetes-specialist"
    assert ask.questions == ["Use kubernetes-specialist for this? [Y/n]"]


@pytest.mark.parametrize("answer", ["n", "no", "nope", "q", EOFError(), KeyboardInterrupt()])
def test_offer_returns_none_on_anything_else(project: Path, answer: str | BaseException) -> None:
    ask = Asker(answer)
    assert offer_agent(quiet_console(), Inventory.discover(project), "k8s pods", ask) is None
    assert len(ask.questions) == 1


@pytest.mark.parametrize("prompt", ["hello there", "", "sql on kubernetes"])
def test_offer_does_not_ask_when_nothing_stands_out(project: Path, prompt: str) -> None:
    ask = Asker("y")
    assert offer_agent(quiet_console(), Inventory.discover(project), prompt, ask) is None
    assert ask.questions == []


# -- the command -------------------------------------------------------------------------------

suggest_app = typer.Typer()
suggest_app.command()(suggest_command)


def invoke(*args: str | Path, stdin: str | None = None) -> tuple[int, str]:
    result = runner.invoke(suggest_app, [str(a) for a in args], input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout


def test_table_lists_matches_with_scores_within_80_columns(project: Path) -> None:
    code, out = invoke("review the sql query in my pull request", "--cwd", project)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["Agent", "Score", "Matched"]
    rows = [line for line in lines[1:] if line.strip() and "stand" not in line]
    assert [row.split()[0] for row in rows][:2] in (
        ["code-reviewer", "sql-pro"],
        ["sql-pro", "code-reviewer"],
    )
    assert all(len(line) <= 80 for line in lines)
    assert float(rows[0].split()[1]) > 0


def test_table_says_which_agent_stands_out(project: Path) -> None:
    _, out = invoke("kubernetes pods crashing in the cluster", "--cwd", project)
    assert "kubernetes-specialist stands out" in out
    _, out = invoke("sql on kubernetes", "--cwd", project)
    assert "No agent stands out" in out


def test_no_match_is_said_plainly(project: Path) -> None:
    code, out = invoke("zebra xylophone", "--cwd", project)
    assert code == 0
    assert "No agent matches this prompt" in out


def test_json_output_and_limit(project: Path) -> None:
    code, out = invoke("k8s pods crashing, also sql", "--cwd", project, "--json", "--limit", "1")
    assert code == 0
    data = json.loads(out)
    assert [m["name"] for m in data["matches"]] == ["kubernetes-specialist"]
    assert data["matches"][0]["matched"] == ["k8s", "pods"]
    assert isinstance(data["matches"][0]["score"], float)
    assert data["standout"] in (None, "kubernetes-specialist")


def test_dash_reads_the_prompt_from_stdin(project: Path) -> None:
    code, out = invoke("-", "--cwd", project, "--json", stdin="optimise this SQL query\n")
    assert code == 0
    assert json.loads(out)["matches"][0]["name"] == "sql-pro"


def test_the_command_is_registered_on_the_main_app(project: Path) -> None:
    result = runner.invoke(app, ["suggest", "sql query", "--cwd", str(project), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["matches"][0]["name"] == "sql-pro"


# -- the labelled set over the real corpus -----------------------------------------------------


def test_labelled_set_is_large_and_names_real_agents(corpus_dir: Path) -> None:
    names = {parse_agent_file(path).name for path in corpus_dir.rglob("*.md")}
    rows = [json.loads(line) for line in LABELLED.read_text("utf-8").splitlines() if line]
    assert len(rows) >= 60
    assert {name for row in rows for name in row["expected"]} <= names
    assert len({name for row in rows for name in row["expected"]}) >= 60


def test_top3_accuracy_and_standout_precision_hold(corpus_dir: Path) -> None:
    agents = [parse_agent_file(path) for path in sorted(corpus_dir.rglob("*.md"))]
    rows = [json.loads(line) for line in LABELLED.read_text("utf-8").splitlines() if line]
    top3 = fired = right = 0
    for row in rows:
        ranked = rank_agents(row["prompt"], agents, limit=3)
        top3 += any(s.name in row["expected"] for s in ranked)
        chosen = standout(ranked)
        if chosen is not None:
            fired += 1
            right += chosen.name in row["expected"]
    assert top3 / len(rows) >= TOP3_FLOOR, f"top-3 {top3}/{len(rows)}"
    assert right / fired >= STANDOUT_PRECISION_FLOOR, f"standout right {right}/{fired}"
