"""`[store] url` in the user's config.toml names the store every project uses; --store and
SUBAGENTS_STORE come first; a project's config may not name it (a cloned repository would
choose where your runs are recorded); a bad URL there is a ConfigError naming file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from store_records import make_task
from subagents.cli.app import app
from subagents.config import load_config
from subagents.errors import ConfigError, StoreError
from subagents.store import SQLiteStore, open_store
from subagents.store.location import default_store_path


def _user_config(home: Path, text: str) -> Path:
    path = home / ".subagents" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _project(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    return root


def _store_with_a_task(path: Path, description: str) -> str:
    with SQLiteStore(path) as store:
        task = make_task(description=description)
        store.create_task(task)
    return task.id


def _listed(project: Path, *options: str) -> list[str]:
    done = CliRunner().invoke(app, ["tasks", "list", "--json", *options], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    return [row["description"] for row in json.loads(done.stdout)]


def test_the_users_config_names_the_store_every_project_uses(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared" / "state.db"
    shared.parent.mkdir()
    _store_with_a_task(shared, "recorded in the shared store")
    _user_config(isolated_home, f'[store]\nurl = "sqlite://{shared}"\n')
    project = _project(tmp_path / "project")
    with open_store(cwd=project) as store:
        assert isinstance(store, SQLiteStore) and store.path == shared
    assert load_config(project).store.url == f"sqlite://{shared}"
    monkeypatch.chdir(project)
    assert _listed(project) == ["recorded in the shared store"]
    assert not default_store_path(project).exists()  # the project's own file is not made


def test_a_postgresql_url_in_the_users_config_opens_a_postgresql_store(
    tmp_path: Path, isolated_home: Path
) -> None:
    _user_config(isolated_home, '[store]\nurl = "postgresql://app:s3cret@127.0.0.1:9/runs"\n')
    with pytest.raises(StoreError) as refused:  # nothing listens there: chosen, not reached
        open_store(cwd=_project(tmp_path / "project"))
    assert "cannot connect to the PostgreSQL store" in refused.value.message
    assert "s3cret" not in str(refused.value)


def test_the_store_option_and_the_environment_come_before_the_config(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stores = {name: tmp_path / f"{name}.db" for name in ("config", "environment", "option")}
    for name, path in stores.items():
        _store_with_a_task(path, f"in the {name} store")
    _user_config(isolated_home, f'[store]\nurl = "{stores["config"]}"\n')
    project = _project(tmp_path / "project")
    monkeypatch.chdir(project)
    monkeypatch.setenv("SUBAGENTS_STORE", str(stores["environment"]))
    with open_store() as store:
        assert isinstance(store, SQLiteStore) and store.path == stores["environment"]
    assert _listed(project) == ["in the environment store"]
    assert _listed(project, "--store", str(stores["option"])) == ["in the option store"]


def test_a_projects_config_cannot_name_the_store(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path / "cloned")
    config = project / ".subagents" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        '[subagents]\nmax_turns = 5\n\n[store]\nurl = "postgresql://them@203.0.113.9/loot"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as refused:
        load_config(project)
    assert refused.value.message.startswith(f"{config}:4: [store] is read from your own config")
    assert refused.value.hint is not None
    assert str(isolated_home / ".subagents" / "config.toml") in refused.value.hint
    with open_store(cwd=project) as store:  # the store stays the project's own file
        assert isinstance(store, SQLiteStore) and store.path == default_store_path(project)
    monkeypatch.chdir(project)
    done = CliRunner().invoke(app, ["run", "--yes", "--model", "openai:x", "hi"])
    assert done.exit_code != 0 and "[store] is read from your own config" in done.output
    assert "Traceback" not in done.output


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("mysql://db/runs", "unknown kind of store 'mysql'"),
        ("   ", "an empty url names no store"),
        ("sqlite://elsewhere.example/state.db", "names the host 'elsewhere.example'"),
    ],
)
def test_a_bad_store_url_in_the_users_config_names_the_file_and_line(
    tmp_path: Path, isolated_home: Path, url: str, said: str
) -> None:
    path = _user_config(isolated_home, f'[subagents]\nmax_turns = 5\n[store]\nurl = "{url}"\n')
    with pytest.raises(ConfigError) as refused:
        open_store(cwd=_project(tmp_path / "project"))
    assert f"{path}:4" in refused.value.message and said in refused.value.message
    assert refused.value.hint is not None and str(path) in refused.value.hint


def test_a_worker_takes_its_store_from_the_users_config(isolated_home: Path) -> None:
    from subagents.cli.app import build_app

    named = "named-in-config.db"  # short: a long path would be cut at the terminal's width
    _user_config(isolated_home, f'[store]\nurl = "{named}"\n')
    result = CliRunner().invoke(build_app("worker"), ["worker"])
    said = " ".join(result.output.split())  # as wrapped at the terminal's width
    assert result.exit_code == 2  # read from the config, and refused: not a shared server
    assert f"Workers share a PostgreSQL store, and {named} is not one" in said
    assert "[store] url in ~/.subagents/config.toml" in said
