"""`assemble mood`: texts scored with the mood model."""

from __future__ import annotations

import argparse
import json
import sys

from assembler.cli.common import batches
from assembler.errors import AssemblerError
from assembler.mood.model import load_mood_model


def run(args: argparse.Namespace) -> int:
    if not args.texts and not args.stdin:
        raise AssemblerError("mood: give TEXT arguments or pass --stdin with one text per line")
    model = load_mood_model()
    for batch in batches(args.texts, sys.stdin if args.stdin else None):
        for mood in model.score_many(batch):
            if args.json:
                record = {
                    "valence": round(mood.valence, 4),
                    "arousal": round(mood.arousal, 4),
                    "primary": mood.primary,
                    "secondary": mood.secondary,
                    "scores": {k: round(v, 4) for k, v in mood.scores.items()},
                    "compound": mood.compound,
                }
                sys.stdout.write(json.dumps(record) + "\n")
            else:
                second = f", {mood.secondary} {mood.secondary_score:.2f}" if mood.secondary else ""
                sys.stdout.write(
                    f"valence {mood.valence:+.2f}  arousal {mood.arousal:.2f}  "
                    f"{mood.primary} {mood.primary_score:.2f}{second}\n"
                )
    return 0
