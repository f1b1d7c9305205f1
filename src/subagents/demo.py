"""`make demo`: the main job on the bundled example project (filled in as features land)."""

from __future__ import annotations


def main() -> None:
    print("subagents demo: nothing to show yet")


if __name__ == "__main__":
    main()
