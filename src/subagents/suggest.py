"""Which agent fits a prompt: a small BM25 ranking over the agents' names and descriptions.

Before the main agent runs, the prompt is matched against the active agents so that a
specialist that clearly fits can be offered ("Use code-reviewer for this? [Y/n]"). Everything
is lexical and local: no network, no model, so it costs well under a millisecond per prompt
once the index is built.

Each agent is one document: its name split on ``-`` / ``_`` (every name word counted
:data:`NAME_WEIGHT` times, because a name is the most deliberate summary of an agent) and its
description with ``<example>``-style tags removed but their words kept, capped at
:data:`DESCRIPTION_CHARS`. Words are lower-cased, stop words dropped and reduced by a light
suffix stemmer (plural ``s``/``ies``/``es``, ``ing``, ``ed``, ``er``, a final ``e``), so
"tests", "testing" and "tested" meet "test" and "writes" meets "technical-writer". Only ASCII
letters and digits make words; a few spellings (``c++``, ``.net``, ``k8s``) are mapped first.

:func:`standout` decides whether the best match is worth a question: its score is at least
:data:`STANDOUT_MIN_SCORE` and at least :data:`STANDOUT_RATIO` times the runner-up's. Both
numbers were tuned on ``bench/suggest/labelled.jsonl`` (see ``bench/bench_suggest.py``) to
keep offers rare but right: a wrong offer costs the person a keystroke and some trust.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from subagents.definitions.model import AgentDefinition

if TYPE_CHECKING:
    from subagents.inventory import AgentRecord

__all__ = [
    "DESCRIPTION_CHARS",
    "NAME_WEIGHT",
    "PROMPT_CHARS",
    "STANDOUT_MIN_SCORE",
    "STANDOUT_RATIO",
    "Suggestion",
    "rank_agents",
    "standout",
    "tokenize",
]

NAME_WEIGHT: Final = 3
DESCRIPTION_CHARS: Final = 4_000
PROMPT_CHARS: Final = 10_000
STANDOUT_MIN_SCORE: Final = 1.0
STANDOUT_RATIO: Final = 1.35

# BM25's usual constants: term-frequency saturation and length normalisation.
_K1: Final = 1.2
_B: Final = 0.75
_CACHE_SIZE: Final = 8

_TAG = re.compile(r"<[^<>]{0,200}>")
_WORD = re.compile(r"[a-z0-9]+")
# Spellings the word pattern would tear apart or that people shorten; mapped before splitting.
_SPELLINGS: Final = (
    (re.compile(r"c\+\+"), " cpp "),
    (re.compile(r"c#"), " csharp "),
    (re.compile(r"(?<![a-z0-9])\.net\b"), " dotnet "),
    (re.compile(r"\bnode\.js\b"), " node "),
    (re.compile(r"\bnext\.js\b"), " nextjs "),
    (re.compile(r"\bvue\.js\b"), " vue "),
)
_ALIASES: Final = {
    "k8s": "kubernetes",
    "kube": "kubernetes",
    "kubectl": "kubernetes",
    "js": "javascript",
    "ts": "typescript",
    "py": "python",
    "golang": "go",
    "postgresql": "postgres",
    "psql": "postgres",
    "tf": "terraform",
    "ml": "machine learning",
    "db": "database",
    "dbs": "database",
    "docs": "documentation",
    "doc": "documentation",
    "perf": "performance",
    "vuln": "vulnerability",
    "vulns": "vulnerability",
    "repo": "repository",
    "infra": "infrastructure",
    "prod": "production",
    "pentest": "penetration test",
    "deps": "dependency",
    "dep": "dependency",
    "auth": "authentication",
}
_STOP_TEXT: Final = """
    a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each few for from
    further get got had has have having he her here hers him his how i if in into is it its
    itself just let me more most my myself no nor not now of off on once only or other our ours
    out over own please same she should so some such than that the their theirs them then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself
    use used using need needs want wants like make sure thing things stuff something someone
    invoke eg etc ie via help hey hi ok okay pls thanks thank
"""
_STOP_WORDS: Final = frozenset(_STOP_TEXT.split())


@dataclass(frozen=True, slots=True)
class Suggestion:
    """One agent's match: its ``score`` and the prompt words that matched, in prompt order.

    The score is BM25 in units of one rare word (see :func:`rank_agents`), rounded to 3 places.
    """

    name: str
    score: float
    matched: tuple[str, ...]


def _stem(word: str) -> str:
    """Strip one common English suffix; crude, but the same crudeness on both sides matches."""
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ches", "ch"), ("shes", "sh")):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            return word[: -len(suffix)] + keep
    for suffix in ("ing", "ed", "er"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return _undouble(word[: -len(suffix)])
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def _undouble(stem: str) -> str:
    """``debugg`` -> ``debug``, ``plann`` -> ``plan``; ``install`` keeps its double l."""
    if len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
        return stem[:-1]
    if stem.endswith("e") and len(stem) > 4:
        return stem[:-1]
    return stem


def tokenize(text: str, *, limit: int = PROMPT_CHARS) -> list[tuple[str, str]]:
    """``(stem, word)`` pairs of ``text`` (cut at ``limit`` chars), stop words left out.

    The word is kept beside its stem so that matches can be shown as the person typed them.
    """
    lowered = text[:limit].lower()
    for pattern, replacement in _SPELLINGS:
        lowered = pattern.sub(replacement, lowered)
    pairs: list[tuple[str, str]] = []
    for word in _WORD.findall(lowered):
        for part in _ALIASES.get(word, word).split():
            if part in _STOP_WORDS or (len(part) < 2 and not part.isdigit()):
                continue
            pairs.append((_stem(part), word))
    return pairs


@dataclass(frozen=True, slots=True)
class _Index:
    """Per term, each agent's precomputed BM25 weight: ranking is then a sum of lookups."""

    names: tuple[str, ...]
    weights: dict[str, dict[int, float]]


def _document_terms(name: str, description: str) -> list[str]:
    words = [stem for stem, _ in tokenize(name.replace("-", " ").replace("_", " "))]
    text = _TAG.sub(" ", description[:DESCRIPTION_CHARS])
    return words * NAME_WEIGHT + [stem for stem, _ in tokenize(text, limit=DESCRIPTION_CHARS)]


def _build_index(documents: Sequence[tuple[str, str]]) -> _Index:
    term_counts: list[dict[str, int]] = []
    for name, description in documents:
        counts: dict[str, int] = {}
        for term in _document_terms(name, description):
            counts[term] = counts.get(term, 0) + 1
        term_counts.append(counts)
    total = len(documents)
    lengths = [sum(counts.values()) for counts in term_counts]
    average = (sum(lengths) / total) if total else 1.0
    frequency: dict[str, int] = {}
    for counts in term_counts:
        for term in counts:
            frequency[term] = frequency.get(term, 0) + 1
    unit = _idf(total, 1)
    weights: dict[str, dict[int, float]] = {}
    for index, counts in enumerate(term_counts):
        norm = _K1 * (1 - _B + _B * lengths[index] / (average or 1.0))
        for term, count in counts.items():
            idf = _idf(total, frequency[term]) / unit
            weights.setdefault(term, {})[index] = idf * count * (_K1 + 1) / (count + norm)
    return _Index(names=tuple(name for name, _ in documents), weights=weights)


def _idf(total: int, df: int) -> float:
    """BM25's inverse document frequency (the variant that is never negative)."""
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


_cache: dict[tuple[tuple[str, str], ...], _Index] = {}


def _index_for(documents: tuple[tuple[str, str], ...]) -> _Index:
    """The index of these documents, built once: the key is the documents themselves."""
    index = _cache.get(documents)
    if index is None:
        index = _build_index(documents)
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        _cache[documents] = index
    return index


def _active_documents(
    definitions: Iterable[AgentDefinition | AgentRecord],
) -> tuple[tuple[str, str], ...]:
    documents: list[tuple[str, str]] = []
    for item in definitions:
        definition = item if isinstance(item, AgentDefinition) else item.definition
        if definition.status == "active":
            documents.append((definition.name, definition.description))
    return tuple(documents)


def rank_agents(
    prompt: str, definitions: Iterable[AgentDefinition | AgentRecord], *, limit: int = 5
) -> list[Suggestion]:
    """The active agents that match ``prompt``, best first, at most ``limit`` of them.

    Scores are BM25 divided by the weight of a word that only one agent has: about 1 for each
    such word matched once, so one threshold suits an inventory of 5 agents as well as of 500.

    Takes definitions or inventory records; invalid and disabled ones are left out. Agents
    with no word in common with the prompt are not listed at all; ties go by name.
    """
    if limit <= 0:
        return []
    index = _index_for(_active_documents(definitions))
    scores: dict[int, float] = {}
    matched: dict[int, list[str]] = {}
    seen: set[str] = set()
    for stem, word in tokenize(prompt):
        if stem in seen:
            continue
        seen.add(stem)
        for agent, weight in index.weights.get(stem, {}).items():
            scores[agent] = scores.get(agent, 0.0) + weight
            matched.setdefault(agent, []).append(word)
    best = sorted(scores, key=lambda agent: (-scores[agent], index.names[agent]))[:limit]
    return [
        Suggestion(name=index.names[a], score=round(scores[a], 3), matched=tuple(matched[a]))
        for a in best
    ]


def standout(ranked: Sequence[Suggestion]) -> Suggestion | None:
    """The first match when it clearly beats the rest, else None.

    Clearly: a score of at least :data:`STANDOUT_MIN_SCORE` (the worth of one word only that
    agent has, or of several commoner ones: not one stray generic word) and at least
    :data:`STANDOUT_RATIO` times the second score (no near tie between two plausible agents).
    ``ranked`` must hold the runner-up too: rank with ``limit`` of 2 or more.
    """
    if not ranked:
        return None
    first = ranked[0]
    if first.score < STANDOUT_MIN_SCORE:
        return None
    if len(ranked) > 1 and first.score < STANDOUT_RATIO * ranked[1].score:
        return None
    return first
