"""config.toml loading: user then project, key-by-key precedence, errors naming file/line/key."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subagents.config import (
    Config,
    SubagentsSettings,
    find_repository_root,
    load_config,
    project_config_path,
    project_directories,
    project_directory_names,
    resolve_home,
    user_config_path,
)
from subagents.errors import ConfigError, SubagentsError
from subagents.models.aliases import TIER_ALIASES


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    directory = tmp_path / "home"
    directory.mkdir()
    return directory


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "work" / "repo"
    (directory / ".git").mkdir(parents=True)
    return directory


def test_defaults_without_any_file(home: Path, project: Path) -> None:
    config = load_config(project, home=home)
    assert config.subagents.enabled is True
    assert config.subagents.discovery == "auto"
    assert config.subagents.max_depth == 3
    assert config.subagents.max_concurrent == 20
    assert config.subagents.max_turns == 50
    assert config.models == {}
    assert config.providers == {}
    assert config.sources == []
    assert config.project_root == project.resolve()
    assert config.home == home


def test_project_overrides_user_key_by_key(home: Path, project: Path) -> None:
    user = write(
        home / ".subagents" / "config.toml",
        """
[subagents]
max_depth = 5
default_model = "sonnet"
disabled = ["from-user"]

[models]
sonnet = "anthropic:claude-sonnet-4-5"
fast = "openai:gpt-4o-mini"

[providers.openai]
api_key_env = "MY_OPENAI_KEY"
timeout_seconds = 30
""",
    )
    proj = write(
        project / ".subagents" / "config.toml",
        """
[subagents]
max_depth = 1
disabled = ["from-project"]

[models]
fast = "openai:local-llama"

[providers.openai]
base_url = "http://localhost:8000/v1"
""",
    )
    config = load_config(project, home=home)
    assert config.sources == [user, proj.resolve()]
    assert config.subagents.max_depth == 1  # project wins
    assert config.subagents.default_model == "sonnet"  # user value kept
    assert config.subagents.disabled == ["from-project"]  # lists are replaced, not joined
    assert config.models == {
        "sonnet": "anthropic:claude-sonnet-4-5",
        "fast": "openai:local-llama",
    }
    openai = config.providers["openai"]
    assert openai.base_url == "http://localhost:8000/v1"
    assert openai.api_key_env == "MY_OPENAI_KEY"
    assert openai.timeout_seconds == 30


def test_nearest_project_config_wins_and_walk_stops_at_repo_root(home: Path, project: Path) -> None:
    outside = write(project.parent / ".subagents" / "config.toml", "[subagents]\nmax_depth = 9\n")
    write(project / ".subagents" / "config.toml", "[subagents]\nmax_depth = 2\n")
    nested = project / "pkg" / "sub"
    write(nested / ".subagents" / "config.toml", "[subagents]\nmax_turns = 7\n")
    deeper = nested / "deeper"
    deeper.mkdir()

    config = load_config(deeper, home=home)
    assert config.subagents.max_turns == 7
    assert config.subagents.max_depth == 3  # only the nearest project file is read
    assert outside not in config.sources

    # Above the repository root nothing is read, even with nothing in the repo.
    (project / ".subagents" / "config.toml").unlink()
    config = load_config(project, home=home)
    assert config.sources == []


def test_without_repository_walk_stops_below_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".subagents" / "config.toml", "[subagents]\nmax_depth = 4\n")
    proj = home / "code" / "thing"
    write(proj.parent / ".subagents" / "config.toml", "[subagents]\nmax_turns = 3\n")
    proj.mkdir(parents=True)

    dirs = project_directories(proj, home=home)
    assert dirs == [proj.resolve(), proj.parent.resolve()]
    assert find_repository_root(proj) is None
    config = load_config(proj, home=home)
    # The home's own .subagents/config.toml is the user config, read once, not as project.
    assert config.sources == [
        home / ".subagents" / "config.toml",
        dirs[1] / ".subagents" / "config.toml",
    ]
    assert config.subagents.max_depth == 4
    assert config.subagents.max_turns == 3
    assert config.project_root == dirs[1]


def test_git_file_marks_a_worktree_root(tmp_path: Path) -> None:
    root = tmp_path / "wt"
    write(root / ".git", "gitdir: /elsewhere\n")
    (root / "a").mkdir()
    assert find_repository_root(root / "a") == root


def test_subagents_home_env_var(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SUBAGENTS_HOME", str(tmp_path))
    assert resolve_home() == tmp_path
    assert user_config_path() == tmp_path / ".subagents" / "config.toml"
    assert resolve_home(tmp_path / "x") == tmp_path / "x"  # the parameter beats the variable
    write(tmp_path / ".subagents" / "config.toml", "[subagents]\nenabled = false\n")
    repo = tmp_path / "r"
    (repo / ".git").mkdir(parents=True)
    assert load_config(repo).subagents.enabled is False
    monkeypatch.delenv("SUBAGENTS_HOME")
    assert resolve_home() == Path.home()


def test_model_fallback_setting_defaults_to_inherit_and_accepts_error(
    home: Path, project: Path
) -> None:
    assert Config().subagents.model_fallback == "inherit"
    config_file = project / ".subagents" / "config.toml"
    write(config_file, '[subagents]\nmodel_fallback = "error"\n')
    assert load_config(project, home=home).subagents.model_fallback == "error"
    write(config_file, '[subagents]\nmodel_fallback = "maybe"\n')
    with pytest.raises(ConfigError, match="model_fallback"):
        load_config(project, home=home)


def test_model_choice_weighs_credentials_and_the_setting() -> None:
    config = Config(models={"fast": "openai:gpt-4o-mini"})
    no_keys: dict[str, str] = {}
    fallback = config.model_choice("sonnet", env=no_keys)
    assert fallback.model is None and fallback.fallback == "no ANTHROPIC_API_KEY"
    assert (
        config.model_choice("sonnet", env={"ANTHROPIC_API_KEY": "k"}).model
        == (TIER_ALIASES["sonnet"])
    )
    strict = Config(subagents=SubagentsSettings(model_fallback="error"))
    refused = strict.model_choice("sonnet", env=no_keys)
    assert refused.model == TIER_ALIASES["sonnet"]
    assert refused.error is not None and "ANTHROPIC_API_KEY" in refused.error


def test_resolve_model_follows_aliases_and_default() -> None:
    config = Config(
        models={"sonnet": "anthropic:claude-sonnet-4-5", "fast": "sonnet", "a": "b", "b": "a"}
    )
    assert config.resolve_model("sonnet") == "anthropic:claude-sonnet-4-5"
    assert config.resolve_model("fast") == "anthropic:claude-sonnet-4-5"
    assert config.resolve_model("inherit") == "inherit"
    assert config.resolve_model("openai:gpt-4o") == "openai:gpt-4o"
    assert config.resolve_model(None) is None
    assert config.resolve_model("a") == "inherit"  # a cycle: not a model, the parent's runs
    assert config.resolve_model("gpt4") == "inherit"  # not understood: the parent's model
    assert config.resolve_model("fable") == TIER_ALIASES["fable"]
    with_default = Config(
        subagents=Config().subagents.model_copy(update={"default_model": "sonnet"}),
        models={"sonnet": "anthropic:claude-sonnet-4-5"},
    )
    assert with_default.resolve_model(None) == "anthropic:claude-sonnet-4-5"


BAD_VALUES = [
    # (file text, line, key fragment)
    ("[subagents]\nenabled = 3\n", 2, "subagents.enabled"),
    ('[subagents]\n\ndiscovery = "sometimes"\n', 3, "subagents.discovery"),
    ('[subagents]\nagents = "x"\n', 2, "subagents.agents"),
    ('# c\n[subagents]\ndisabled = ["a", 3]\n', 3, "subagents.disabled"),
    ("[subagents]\nmax_depth = -1\n", 2, "subagents.max_depth"),
    ('[subagents]\nmax_concurrent = "many"\n', 2, "subagents.max_concurrent"),
    ("[subagents]\nmax_turns = 0\n", 2, "subagents.max_turns"),
    ('[subagents]\ndefault_model = ""\n', 2, "subagents.default_model"),
    ("[subagents]\nmax_dept = 4\n", 2, "subagents.max_dept"),
    ("[subagnts]\nmax_depth = 4\n", 1, "subagnts"),
    ("subagents = 3\n", 1, "subagents"),
    ("[models]\nsonnet = 5\n", 2, "models.sonnet"),
    ("\n\nmodels = [1]\n", 3, "models"),
    (
        '[providers.openai]\nbase_url = "x"\ntimeout_seconds = -1\n',
        3,
        "providers.openai.timeout_seconds",
    ),
    ("[providers.openai]\nmax_retries = 99\n", 2, "providers.openai.max_retries"),
    ('[providers.openai]\nbase_ulr = "x"\n', 2, "providers.openai.base_ulr"),
    ("providers = { openai = { base_url = 1 } }\n", 1, "providers.openai.base_url"),
    ("[subagents]\nmax_depth = 2\n[subagents.extra]\nx = 1\n", 3, "subagents.extra"),
    ("models.fast = 1\n", 1, "models.fast"),
]


@pytest.mark.parametrize(("text", "line", "key"), BAD_VALUES)
def test_bad_values_name_file_line_and_key(
    home: Path, project: Path, text: str, line: int, key: str
) -> None:
    path = write(project / ".subagents" / "config.toml", text)
    with pytest.raises(ConfigError) as caught:
        load_config(project, home=home)
    message = str(caught.value)
    assert f"{path.resolve()}:{line}:" in message
    assert repr(key) in message
    assert caught.value.hint and "correct or remove" in caught.value.hint


def test_unknown_key_suggests_the_closest(home: Path) -> None:
    write(home / ".subagents" / "config.toml", "[subagents]\nmax_dept = 4\n")
    with pytest.raises(ConfigError, match=r"did you mean 'subagents.max_depth'"):
        load_config(home / "nowhere", home=home)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[budget]\nmax_token = 5000\n", "did you mean 'budget.max_tokens'"),
        ("[budget]\nmax_tokens = 0\n", "max_tokens"),
        ('[budget]\nmax_tokens = "lots"\n', "max_tokens"),
        ("[budget]\nmax_usd = 0\n", "max_usd"),
        ("[budget]\nmax_usd = nan\n", "max_usd"),
    ],
)
def test_a_bad_budget_is_a_clear_error(home: Path, text: str, said: str) -> None:
    write(home / ".subagents" / "config.toml", text)
    with pytest.raises(ConfigError, match=said):
        load_config(home / "nowhere", home=home)


def test_the_budget_table_sets_the_runs_token_budget(home: Path) -> None:
    write(home / ".subagents" / "config.toml", "[budget]\nmax_tokens = 250000\nmax_usd = 2.5\n")
    budget = load_config(home / "nowhere", home=home).budget
    assert (budget.max_tokens, budget.max_usd) == (250_000, 2.5)


def test_every_problem_is_listed(home: Path, project: Path) -> None:
    write(
        project / ".subagents" / "config.toml",
        "[subagents]\nmax_depth = -1\nmax_turns = 0\n",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(project, home=home)
    lines = caught.value.message.splitlines()
    assert [line.split(": key ")[1].split(":")[0] for line in lines] == [
        "'subagents.max_depth'",
        "'subagents.max_turns'",
    ]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("[subagents]\nmax_depth = \n", 2),
        ("[subagents]\nenabled = true\nenabled = false\n", 3),
        ('[models]\nsonnet = "unterminated\n', 2),
        ('a = "x', 1),
    ],
)
def test_toml_syntax_errors_name_file_and_line(
    home: Path, project: Path, text: str, line: int
) -> None:
    path = write(project / ".subagents" / "config.toml", text)
    with pytest.raises(ConfigError) as caught:
        load_config(project, home=home)
    message = str(caught.value)
    assert re.search(rf"{re.escape(str(path.resolve()))}:{line}\b", message), message
    assert "TOML syntax error" in message
    assert "toml.io" in message


def test_unreadable_and_non_utf8_files(home: Path, project: Path) -> None:
    path = project / ".subagents" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"[subagents]\n# caf\xe9\n")
    with pytest.raises(ConfigError, match=r"config.toml:2: the config file is not valid UTF-8"):
        load_config(project, home=home)
    path.unlink()
    path.mkdir()  # a directory where the file should be: not a file, so not read
    assert load_config(project, home=home).sources == []
    user = home / ".subagents" / "config.toml"
    user.mkdir(parents=True)
    with pytest.raises(ConfigError, match="cannot read the config file"):
        load_config(project, home=home)


def test_project_config_path_none_without_file(home: Path, project: Path) -> None:
    assert project_config_path(project, home=home) is None


_toml_scalars = st.one_of(
    st.integers(-5, 200),
    st.booleans(),
    st.text(max_size=8),
    st.lists(st.one_of(st.text(max_size=4), st.integers(0, 3)), max_size=3),
)
_key_names = st.sampled_from(
    [
        "enabled",
        "default_model",
        "discovery",
        "agents",
        "disabled",
        "max_depth",
        "max_concurrent",
        "max_turns",
        "bogus",
        "base_url",
        "timeout_seconds",
    ]
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    table=st.sampled_from(["subagents", "models", "providers.openai", "other"]),
    values=st.dictionaries(_key_names, _toml_scalars, max_size=4),
)
def test_any_table_loads_or_raises_config_error(
    tmp_path: Path, table: str, values: dict[str, object]
) -> None:
    import tomli_w

    text = tomli_w.dumps({"x": values}).replace("[x]", f"[{table}]", 1) if values else ""
    path = write(tmp_path / "h" / ".subagents" / "config.toml", text)
    try:
        load_config(tmp_path / "h" / "nowhere", home=tmp_path / "h")
    except ConfigError as error:
        assert isinstance(error, SubagentsError)
        assert str(path) in str(error)
        assert re.search(r"config\.toml:\d+: ", str(error)), str(error)


def _walked_with_paths(cwd: Path, home: Path) -> list[Path]:
    """project_directories() as it was written with Path objects (the walk it must keep)."""
    start, home_dir = cwd.resolve(), home.resolve()
    directories: list[Path] = []
    for directory in (start, *start.parents):
        if directory == home_dir:
            break
        directories.append(directory)
        if (directory / ".git").exists():
            break
    return directories


@settings(max_examples=60, deadline=None)
@given(
    depth=st.integers(min_value=0, max_value=4),
    git_at=st.one_of(st.none(), st.integers(min_value=0, max_value=4)),
    git_is_file=st.booleans(),
    home_at=st.one_of(st.none(), st.integers(min_value=0, max_value=4)),
    through_link=st.booleans(),
)
def test_the_project_walk_finds_what_a_walk_of_paths_finds(
    depth: int, git_at: int | None, git_is_file: bool, home_at: int | None, through_link: bool
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch) / "base"
        levels = [base / "/".join(f"d{i}" for i in range(n)) if n else base for n in range(5)]
        levels[depth].mkdir(parents=True)
        if git_at is not None and git_at <= depth:
            marker = levels[git_at] / ".git"
            if git_is_file:
                marker.write_text("gitdir: x\n")
            else:
                marker.mkdir()
        home = levels[home_at] if home_at is not None else Path(scratch) / "home"
        cwd = levels[depth]
        if through_link:
            (Path(scratch) / "link").symlink_to(cwd, target_is_directory=True)
            cwd = Path(scratch) / "link"
        expected = _walked_with_paths(cwd, home)
        assert project_directories(cwd, home=home) == expected
        assert project_directory_names(cwd, home=home) == [str(path) for path in expected]
