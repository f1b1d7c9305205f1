"""The inventory watcher reloads for real when agent files change on disk."""

from __future__ import annotations

import asyncio
from pathlib import Path

from subagents.inventory import Inventory

AGENT = "---\nname: {name}\ndescription: Watches.\n---\n\nYou watch.\n"
WAIT_SECONDS = 15.0


def make_repo(tmp_path: Path) -> tuple[Path, Path, Path]:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    folder = repo / ".claude" / "agents"
    folder.mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    return repo, folder, home


async def wait_for(condition: asyncio.Event) -> None:
    await asyncio.wait_for(condition.wait(), timeout=WAIT_SECONDS)


async def test_watch_reloads_on_new_changed_and_removed_files(tmp_path: Path) -> None:
    repo, folder, home = make_repo(tmp_path)
    inventory = Inventory.discover(repo, home=home, include_builtin=False)
    reloaded = asyncio.Event()

    def on_reload(_: Inventory) -> None:
        reloaded.set()

    async with inventory.watch(debounce_ms=50, on_reload=on_reload) as watched:
        assert watched is inventory
        (folder / "watcher.md").write_text(AGENT.format(name="watcher"), encoding="utf-8")
        while "watcher" not in inventory.records:
            await wait_for(reloaded)
            reloaded.clear()
        first = inventory.records["watcher"]  # a local: the record is replaced on reload
        assert first.status == "active"

        (folder / "watcher.md").write_text("---\nname: watcher\n---\n", encoding="utf-8")
        while inventory.records["watcher"].status != "invalid":
            await wait_for(reloaded)
            reloaded.clear()

        (folder / "watcher.md").unlink()
        while "watcher" in inventory.records:
            await wait_for(reloaded)
            reloaded.clear()
    assert inventory.generation >= 3


async def test_watch_ignores_unrelated_files_and_survives_bad_config(tmp_path: Path) -> None:
    repo, folder, home = make_repo(tmp_path)
    config = repo / ".subagents" / "config.toml"
    config.parent.mkdir()
    config.write_text("[subagents]\nmax_depth = 2\n", encoding="utf-8")
    inventory = Inventory.discover(repo, home=home, include_builtin=False)
    errors: list[Exception] = []
    error_seen = asyncio.Event()
    reloaded = asyncio.Event()

    def on_error(error: Exception) -> None:
        errors.append(error)
        error_seen.set()

    async with inventory.watch(
        debounce_ms=50, on_reload=lambda _: reloaded.set(), on_error=on_error
    ):
        (folder / "notes.txt").write_text("not an agent", encoding="utf-8")
        config.write_text("[subagents]\nmax_depth = 'x'\n", encoding="utf-8")
        await wait_for(error_seen)
        assert "max_depth" in str(errors[0])
        assert inventory.config.subagents.max_depth == 2  # the previous state is kept
        generation = inventory.generation
        config.write_text("[subagents]\nmax_depth = 4\n", encoding="utf-8")
        while inventory.config.subagents.max_depth != 4:
            await wait_for(reloaded)
            reloaded.clear()
        assert inventory.generation > generation


async def test_watch_with_no_folders_is_a_no_op(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    inventory = Inventory.discover(repo, home=home, include_builtin=False)
    async with inventory.watch():
        pass
    assert inventory.generation == 0
