"""SCRATCHPAD.md: sections held under their token caps, rendered with Jinja2, stamped with
frontmatter; and the reading side (parse, freshness) that `show` and `check` use.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.config.schema import Config, bundled_dir
from assembler.errors import AssemblerError
from assembler.tokens import TokenCounter

if TYPE_CHECKING:
    import jinja2


@dataclass(frozen=True)
class Item:
    """One line of a section. Items with a higher `priority` number are dropped first."""

    text: str
    label: str | None = None
    priority: int = 1
    # A heading item only describes the others (e.g. the daily note's "From:"): a section left
    # with nothing but heading items is dropped whole rather than shown as an empty shell.
    heading: bool = False
    # What of the line counts as news for hosts that send the block once per session and again
    # when it changed: None, the whole text; "" nothing (a clock: the local time, "last 10m
    # ago"); else the words that matter ("frustrated", not the score that drifts each render).
    gist: str | None = None


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    items: tuple[Item, ...]
    style: str = "fields"  # fields: "- **Label:** text"; quote: "> text"

    def without(self, item: Item) -> Section:
        return replace(self, items=tuple(i for i in self.items if i is not item))


@dataclass
class Fitted:
    """The sections that fit, their rendered text, and what was dropped to fit."""

    sections: list[Section]
    texts: list[str]
    tokens: int
    dropped: list[str] = field(default_factory=list)


@functools.lru_cache(maxsize=8)
def _environment(folders: tuple[str, ...]) -> jinja2.Environment:
    """Return the Jinja2 environment of these template folders, shared by every Renderer, so a
    daemon compiles each template once (auto_reload still picks up an edited template)."""
    import jinja2  # here, not at the top: `check`, `show` and the hooks read, never render

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(list(folders)),
        autoescape=False,  # Markdown, not HTML
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=True,
    )


def renderer_for(config: Config) -> Renderer:
    """Given the config, return the Renderer of its templates (`output.template_dir` over the
    bundled ones). Raise AssemblerError if that folder does not exist."""
    if not config.output.template_dir:
        return Renderer(None)
    folder = config.workspace / Path(config.output.template_dir).expanduser()
    if not folder.is_dir():
        raise AssemblerError(
            f"At 'output.template_dir': '{folder}' is not a folder; create it or clear the key"
        )
    return Renderer(folder)


class Renderer:
    """Renders sections and the whole file from the templates (a user folder overrides any)."""

    def __init__(self, user_template_dir: Path | None = None) -> None:
        folders = [str(user_template_dir)] if user_template_dir else []
        folders.append(str(bundled_dir("templates")))
        self.env = _environment(tuple(folders))

    def section(self, section: Section) -> str:
        """Given a section, return its Markdown from `sections/<name>.md.j2`, else the default."""
        template = self.env.select_template(
            [f"sections/{section.name}.md.j2", "sections/default.md.j2"]
        )
        return template.render(section=section).strip() + "\n"

    def page(self, **context: Any) -> str:
        """Given the page context, return the Markdown body of SCRATCHPAD.md."""
        return self.env.get_template("scratchpad.md.j2").render(**context)

    def agent_part(self, context: Mapping[str, Any]) -> str:
        """Given the context `sections.agent_context` builds, return the agent sections'
        Markdown from `agent_sections.md.j2`.
        """
        return self.env.get_template("agent_sections.md.j2").render(**context)


def fit_sections(
    sections: Sequence[Section],
    renderer: Renderer,
    count: TokenCounter,
    *,
    cap: int,
    section_caps: Mapping[str, int],
    shortest: Mapping[str, int] | None = None,
) -> Fitted:
    """Given sections in display order, return those that fit the caps once rendered.

    Each section is first held under its own cap, then the whole under `cap`, by taking the
    item with the highest priority number (ties: the later section, then the later item) and
    dropping it; an item of a section named in `shortest` is first cut at a word ("…") as
    little as makes the text fit, but to no fewer than that many characters: a line that
    does not fit is shortened, and only when that is not enough is it dropped, before any
    line of a lower number is touched. A section left with no items, or only heading items, is
    dropped whole. Every drop is recorded as "section: label".
    """
    dropped: list[str] = []
    current = list(sections)
    floors = shortest or {}

    def fits(index: int | None) -> bool:
        if index is not None:
            limit = section_caps.get(current[index].name)
            return limit is None or count(renderer.section(current[index])) <= limit
        return sum(count(renderer.section(s)) for s in current if s.items) <= cap

    def cut(text: str, width: int) -> str:
        """Return `text` cut to at most `width` characters at a word, "…" at the end (never
        inside a `code span`)."""
        if len(text) <= width:
            return text
        head = text[: max(width - 1, 0)]
        if " " in head[len(head) // 2 :]:
            head = head[: head.rindex(" ")]
        head = head.rstrip(" ,;:")
        if head.count("`") % 2:
            head = head[: head.rindex("`")].rstrip(" ,;:")
        return head + "…"

    def shorten(index: int, position: int, scope: int | None) -> bool:
        """Cut the item at `position` of section `index` as little as makes `scope` fit;
        return False (leaving it whole) when even the shortest cut does not."""
        section = current[index]
        item = section.items[position]
        least = floors.get(section.name)
        if least is None or len(item.text) <= least:
            return False

        def cut_to(width: int) -> None:
            items = list(section.items)
            items[position] = replace(item, text=cut(item.text, width))
            current[index] = replace(section, items=tuple(items))

        cut_to(least)
        if not fits(scope):
            current[index] = section
            return False
        low, high = least, len(item.text) - 1  # `low` fits; find the longest that does
        while low < high:
            middle = (low + high + 1) // 2
            cut_to(middle)
            if fits(scope):
                low = middle
            else:
                high = middle - 1
        cut_to(low)
        return True

    def drop_one(candidates: list[int], scope: int | None) -> bool:
        best: tuple[int, int, int] | None = None
        for index in candidates:
            for position, item in enumerate(current[index].items):
                key = (item.priority, index, position)
                if best is None or key > best:
                    best = key
        if best is None:
            return False
        _, index, position = best
        if shorten(index, position, scope):
            return True
        item = current[index].items[position]
        dropped.append(f"{current[index].name}: {item.label or _clip(item.text, 40)}")
        current[index] = current[index].without(item)
        return True

    for index, section in enumerate(current):
        while section_caps.get(section.name) is not None and current[index].items:
            if fits(index):
                break
            drop_one([index], index)
    while True:
        for section in current:
            if section.items and all(item.heading for item in section.items):
                for item in section.items:
                    dropped.append(f"{section.name}: {item.label or _clip(item.text, 40)}")
        current = [s for s in current if any(not item.heading for item in s.items)]
        texts = [renderer.section(s) for s in current]
        tokens = sum(count(t) for t in texts)
        if tokens <= cap or not drop_one(list(range(len(current))), None):
            return Fitted(current, texts, tokens, dropped)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
