"""Words: which ones carry content, in the order a text says them (stopwords, punctuation and
code blocks split the runs)."""

from __future__ import annotations

import re

# Words that carry no topic. Short on purpose: technical words (deploy, error, api) must stay.
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have haven't
    having he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll
    i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor
    not of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves
    then there there's these they they'd they'll they're they've this those through to too under
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's which while who who's whom why why's with won't would wouldn't you you'd
    you'll you're you've your yours yourself yourselves ok okay yes yeah yep nope hey hi hello
    thanks thank please just really still now again maybe actually think know want need get got
    going go let like make see look one two thing things way well right sure good great lot bit
    also something anything everything nothing time today tonight tomorrow yesterday will shall
    may might must can could would should did done do does try tried use used using work working
    keeps keep kept said say says tell told give gave show shows night morning evening bye
    cheers thx lol cool nice fine sorry else wait till until anyway unrelated bad
    """.split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*[A-Za-z0-9]|[A-Za-z]")
_PHRASE_BREAK = re.compile(r"[.,;:!?()\[\]{}\"`<>|\n]+|\s[-–—]\s")
CODE_BLOCK = re.compile(r"```.*?```", re.DOTALL)


def content_words(text: str) -> list[str]:
    """Given a text, return its content words (no stopwords, no code blocks), in order."""
    return [word for run in content_runs(CODE_BLOCK.sub(" ", text)) for word in run]


def content_runs(text: str) -> list[list[str]]:
    """Given a text, return its runs of content words (stopwords and punctuation split runs)."""
    runs: list[list[str]] = []
    for chunk in _PHRASE_BREAK.split(text):
        run: list[str] = []
        for token in [*_WORD.findall(chunk), ""]:
            lowered = token.lower()
            if token and lowered not in STOPWORDS and len(lowered) > 2:
                run.append(token)
            elif run:
                runs.append(run)
                run = []
    return runs
