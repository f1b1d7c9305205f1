"""`subagents models check PROVIDER:MODEL`: what an endpoint can do, and the settings to use."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from subagents.cli.common import make_console, user_errors
from subagents.cli.options import CwdOption, JsonOption

if TYPE_CHECKING:
    from subagents.config import Config
    from subagents.models.base import Model
    from subagents.models.probe import ModelCheck
    from subagents.models.settings import ToolCallMode
    from subagents.redaction import Redactor

__all__ = ["models_app"]

DEFAULT_TIMEOUT_SECONDS = 60.0

models_app = typer.Typer(
    help="Models and their endpoints: what they can do, and how to configure them.",
    no_args_is_help=True,
)


@models_app.command("check")
def check_command(
    model: Annotated[
        str, typer.Argument(help="PROVIDER:MODEL (or an alias), e.g. local:qwen2.5-1.5b.")
    ],
    timeout: Annotated[
        float,
        typer.Option("--timeout", min=0.1, help="Seconds each probe may take (default 60)."),
    ] = DEFAULT_TIMEOUT_SECONDS,
    cwd: CwdOption = None,
    as_json: JsonOption = False,
) -> None:
    """Probe a model's endpoint (reachable, native tool calls, parallel calls, JSON schema)
    and print the [providers.NAME] tool_calls setting to use. Exits 1 when unreachable."""
    from subagents.cli.servers import model_server
    from subagents.config import load_config
    from subagents.models.probe import check_in_process_model, check_model
    from subagents.models.resolve import resolve_model_string, tool_call_mode
    from subagents.redaction import Redactor
    from subagents.secrets import known_credentials

    with user_errors():
        config = load_config(cwd)
        resolved = resolve_model_string(model, config.models)
        provider = resolved.partition(":")[0]
        build = _builder(config, resolved, timeout)
        settings = config.providers.get(provider)
        found = model_server(resolved, config.providers)
        if provider == "llamacpp" and (settings is None or settings.base_url is None):
            # in-process: no server, no native calls
            build("schema")  # a missing file or package is reported before any probe
            check = asyncio.run(check_in_process_model(build, timeout_seconds=timeout))
        else:
            build("native")  # a missing key or an unknown provider is reported before any probe
            local = found is not None and found.server.kind == "local"
            check = asyncio.run(check_model(build, timeout_seconds=timeout, local=local))
    redactor = Redactor(known_credentials(config))
    configured = tool_call_mode(provider, settings)
    server = redactor.value(found.to_dict()) if found is not None else None
    if as_json:
        data = redactor.value({**check.to_dict(), "provider": provider})
        data["server"] = server
        data["configured"] = configured
        data["config"] = _snippet(provider, check.recommendation)
        typer.echo(json.dumps(data, indent=2))
    else:
        _print(check, provider, redactor, configured, server)
    if check.recommendation is None:
        raise typer.Exit(1)


def _builder(config: Config, resolved: str, timeout: float) -> Callable[[ToolCallMode], Model]:
    """Models of ``resolved`` configured as usual, but with ``mode`` and no retries: a probe
    reports a failure, it does not wait through backoffs."""
    from subagents.models.resolve import build_model
    from subagents.models.settings import ProviderSettings

    provider = resolved.partition(":")[0]
    settings = config.providers.get(provider) or ProviderSettings()

    def build(mode: ToolCallMode) -> Model:
        probing = settings.model_copy(
            update={
                "tool_calls": mode,
                "max_retries": 0,
                "timeout_seconds": timeout,
                "connect_timeout_seconds": min(settings.connect_timeout_seconds, timeout),
            }
        )
        providers = {**config.providers, provider: probing}
        return build_model(resolved, aliases=config.models, providers=providers)

    return build


def _snippet(provider: str, mode: ToolCallMode | None) -> str | None:
    return None if mode is None else f'[providers.{provider}]\ntool_calls = "{mode}"'


_ADVICE = {
    "native": "the model calls tools natively.",
    "schema": "no native tool calls, but the server enforces JSON schemas: each turn is "
    "constrained to one tool call or a reply.",
    "text": "neither native tool calls nor enforced JSON schemas: the model must write its "
    "tool calls in its answers.",
}

_LOCAL_SCHEMA_ADVICE = (
    "the server enforces JSON schemas: each turn is constrained to one tool call or a reply, "
    "which holds a small local model to its tools better than its own tool-call template; "
    'native calls work too, if its model is a strong one: tool_calls = "native"'
)


def _print(
    check: ModelCheck,
    provider: str,
    redactor: Redactor,
    configured: str,
    server: dict[str, Any] | None,
) -> None:
    from rich.table import Table

    from subagents.cli.answer import markup_safe, quote_markup

    console = make_console()
    if server is not None:  # redacted already
        console.print(markup_safe(server["summary"], console), highlight=False)
    title = markup_safe(redactor.text(check.model), console)
    table = Table(show_edge=False, pad_edge=False, title=title)
    for column in ("Check", "Result", "Detail"):
        table.add_column(column)
    styles = {"yes": "green", "no": "red", "skipped": "dim"}
    for result in check.results:
        status = f"[{styles[result.status]}]{result.status}[/]"
        detail = markup_safe(redactor.text(result.detail), console)  # a server's words
        table.add_row(quote_markup(result.check), status, detail)
    console.print(table)
    mode = check.recommendation
    if mode is None:
        model = markup_safe(check.model, console)
        console.print(
            f"[red]{model} did not answer the first probe[/] (see above): check "
            f"that its server is running, and {quote_markup(f'[providers.{provider}]')} base_url "
            "and API key in config.toml."
        )
        return
    advice = _ADVICE[mode]
    if mode == "schema" and check.status("native tool calls") == "yes":
        advice = _LOCAL_SCHEMA_ADVICE
    if mode == configured or (mode == "native" and configured == "auto"):
        # "auto" is native calls, and calls written as text read too: right for such a model
        console.print(f'\ntool_calls = "{configured}", in force now, is the one to use: {advice}')
        return
    console.print(f"\nRecommended ({advice}) Add to .subagents/config.toml:\n")
    console.print(quote_markup(_snippet(provider, mode) or ""), highlight=False)
