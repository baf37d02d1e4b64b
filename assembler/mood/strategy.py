"""Response strategy: how the agent should answer, chosen from the mood by a rule table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from assembler.config.schema import StrategyRule
from assembler.mood.window import NEGATIVE_MOODS, MoodState

# The mood that means "no emotion read": its state never steers the answer.
NO_EMOTION = "neutral"


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
    # True when the window shows no clear emotion (or none that a rule covers): the fallback
    # rule's defaults apply and there is nothing for the agent to adapt to; say so in one line.
    no_signal: bool = False


def choose_strategy(
    mood: MoodState,
    rules: Mapping[str, StrategyRule],
    *,
    min_confidence: float,
    fallback: str,
) -> Strategy:
    """Given the mood state and the rule table, return the strategy for the primary mood.

    The strategy fires (a mood's own rule, `no_signal` False) when the primary mood is an
    emotion read with at least `min_confidence` and has a rule. Otherwise the `fallback` rule
    applies with `no_signal` True: no human messages, a neutral primary (the state's calibrated
    confidence says the human is probably not emotional), a weak reading, or no rule for the
    mood; acting on a weak guess is worse than a neutral answer.
    A positive mood read while one of the newest readings is negative (`RECENT_READINGS`) does
    not fire either: a warm strategy for a human who was just frustrated is worse than none.
    Raise KeyError if `fallback` has no rule (config validation rules that out).
    """
    no_signal = True
    if mood.messages == 0:
        name, reason = fallback, "no human messages in the window"
    elif mood.primary == NO_EMOTION:
        name = fallback
        reason = (
            f"no clear emotion in {mood.messages} human message{'s' if mood.messages != 1 else ''}"
            f" (confidence {mood.confidence:.2f} that there is one)"
        )
    elif mood.confidence < min_confidence:
        name = fallback
        reason = (
            f"mood {mood.primary} read with confidence {mood.confidence:.2f}, "
            f"below {min_confidence:.2f}"
        )
    elif mood.primary not in rules:
        name, reason = fallback, f"no rule for mood {mood.primary!r}"
    elif mood.primary in POSITIVE and (negative := _recent_negative(mood)) is not None:
        # "Match their energy" for a human who was just frustrated or worried would be wrong
        # either way the reading goes: a warm strategy never follows a negative one.
        name = fallback
        reason = f"{mood.primary} read right after {negative}: mixed, not acted on"
    else:
        name, no_signal = mood.primary, False
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
        no_signal=no_signal,
    )


# The moods whose strategies are warm: they must not follow a negative one (NEGATIVE_MOODS).
POSITIVE = frozenset({"happy", "grateful", "curious"})
# How many of the newest readings a negative one among them keeps a positive strategy off.
RECENT_READINGS = 3


def _recent_negative(mood: MoodState) -> str | None:
    """The negative mood among the newest readings of the window, if there is one."""
    return next(
        (p.mood for p in reversed(mood.points[-RECENT_READINGS:]) if p.mood in NEGATIVE_MOODS), None
    )
