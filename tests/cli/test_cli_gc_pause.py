"""The console script pauses Python's cyclic garbage collector while a command starts (issue
14: `subagents run` spent tens of ms in collections that found nothing to free), and turns it
back on after GC_PAUSE_SECONDS, and at exit, after freezing what is alive then (the teardown's
collections would scan it all again). Each case runs in a fresh interpreter: pausing the
collector of the test process would change every other test."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _run(code: str) -> list[bool]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    states: list[bool] = json.loads(done.stdout.splitlines()[-1])
    return states


def test_the_collector_is_paused_then_back_on() -> None:
    code = (
        "import gc, json, time\n"
        "from subagents.cli.app import pause_gc\n"
        "pause_gc(0.2)\n"
        "paused = gc.isenabled()\n"
        "deadline = time.monotonic() + 10\n"
        "while not gc.isenabled() and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "print(json.dumps([paused, gc.isenabled()]))\n"
    )
    assert _run(code) == [False, True]


@pytest.mark.slow
def test_a_collector_that_was_off_stays_off() -> None:
    code = (
        "import gc, json, time\n"
        "from subagents.cli.app import pause_gc\n"
        "gc.disable()\n"
        "pause_gc(0.05)\n"
        "time.sleep(0.5)\n"
        "print(json.dumps([gc.isenabled()]))\n"
    )
    assert _run(code) == [False]


def test_the_console_script_pauses_it_for_the_command() -> None:
    code = (
        "import gc, json, sys\n"
        "sys.argv = ['subagents', '--version']\n"
        "from subagents.cli.app import GC_PAUSE_SECONDS, main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps([gc.isenabled(), GC_PAUSE_SECONDS <= 5]))\n"
    )
    assert _run(code) == [False, True]


def test_the_collector_is_back_on_for_the_interpreters_last_collection() -> None:
    # atexit runs its handlers last registered first: this one runs after pause_gc's
    code = (
        "import atexit, gc, json\n"
        "atexit.register(lambda: print(json.dumps([gc.isenabled(), gc.get_freeze_count() > 0])))\n"
        "from subagents.cli.app import pause_gc\n"
        "pause_gc(60)\n"
        "print(json.dumps([gc.isenabled()]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == [[False], [True, True]]


def test_objects_made_after_the_freeze_are_still_collected() -> None:
    # a handler registered before pause_gc runs after its freeze: the cycle it makes then is
    # garbage the interpreter's collections still find and finalise
    code = (
        "import atexit, gc\n"
        "class Cycle:\n"
        "    def __del__(self):\n"
        "        print('finalised', flush=True)\n"
        "def make_garbage():\n"
        "    cycle = Cycle()\n"
        "    cycle.me = cycle\n"
        "atexit.register(make_garbage)\n"
        "from subagents.cli.app import pause_gc\n"
        "pause_gc(60)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["finalised"]
