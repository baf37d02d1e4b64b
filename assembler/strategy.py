"""Response strategy: how the agent should answer, chosen from the mood by a rule table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from assembler.config import StrategyRule
from assembler.sentiment import MoodState


@dataclass(frozen=True)
class Strategy:
    """The rule that applies, and why it was chosen."""

    mood: str  # the rule's name
    style: str
    tone: str
    verbosity: str
    preamble: bool
    note: str
    reason: str


def choose_strategy(
    mood: MoodState,
    rules: Mapping[str, StrategyRule],
    *,
    min_confidence: float,
    fallback: str,
) -> Strategy:
    """Given the mood state and the rule table, return the strategy for the primary mood.

    A mood read with less than `min_confidence`, or one without a rule, gets the `fallback`
    rule: acting on a weak guess is worse than a neutral answer.
    Raise KeyError if `fallback` has no rule (config validation rules that out).
    """
    if mood.messages == 0:
        name, reason = fallback, "no human messages in the window"
    elif mood.confidence < min_confidence:
        name = fallback
        reason = (
            f"mood {mood.primary} read with confidence {mood.confidence:.2f}, "
            f"below {min_confidence:.2f}"
        )
    elif mood.primary not in rules:
        name, reason = fallback, f"no rule for mood {mood.primary!r}"
    else:
        name = mood.primary
        reason = f"primary mood {mood.primary} ({mood.primary_score:.2f}), "
        reason += f"confidence {mood.confidence:.2f}"
    rule = rules[name]
    return Strategy(
        mood=name,
        style=rule.style,
        tone=rule.tone,
        verbosity=rule.verbosity,
        preamble=rule.preamble,
        note=rule.note,
        reason=reason,
    )
