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
) -> Fitted:
    """Given sections in display order, return those that fit the caps once rendered.

    Each section is first held under its own cap, then the whole under `cap`, by dropping the
    item with the highest priority number (ties: the later section, then the later item).
    A section left with no items, or only heading items, is dropped whole. Every drop is
    recorded as "section: label".
    """
    dropped: list[str] = []
    current = list(sections)

    def drop_one(candidates: list[int]) -> bool:
        best: tuple[int, int, int] | None = None
        for index in candidates:
            for position, item in enumerate(current[index].items):
                key = (item.priority, index, position)
                if best is None or key > best:
                    best = key
        if best is None:
            return False
        _, index, position = best
        item = current[index].items[position]
        dropped.append(f"{current[index].name}: {item.label or _clip(item.text, 40)}")
        current[index] = current[index].without(item)
        return True

    for index, section in enumerate(current):
        limit = section_caps.get(section.name)
        while limit is not None and current[index].items:
            if count(renderer.section(current[index])) <= limit:
                break
            drop_one([index])
    while True:
        for section in current:
            if section.items and all(item.heading for item in section.items):
                for item in section.items:
                    dropped.append(f"{section.name}: {item.label or _clip(item.text, 40)}")
        current = [s for s in current if any(not item.heading for item in s.items)]
        texts = [renderer.section(s) for s in current]
        tokens = sum(count(t) for t in texts)
        if tokens <= cap or not drop_one(list(range(len(current)))):
            return Fitted(current, texts, tokens, dropped)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
