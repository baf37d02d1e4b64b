"""What the human is working on, in their own words: their newest message that says something.

The human's turns are read from the newest back. The newest turn that carries content is the
current work, whether it asks something (a request, a question) or tells something (a report,
a statement of what they see now: "after the change the timeout still shows up once in ten
runs" is what they work on). Greetings, thanks and acknowledgements are passed over, and so is
a remark too short to say what it is about; an older turn is shown only when every newer one
is of these. A short answer to the agent's question ("yes", "the second one", "go") is shown
with the question it answers. The line is the turn's sentence that asks (or, of a report, its
first sentence that says what it is about), cut at a sentence, in the human's language. A
request that only points back ("merge it and finish the task", "how do I fix it") is shown
after the older request it points to. When the human's last word after the request says it is
done (an outcome: "1.14.4 is on prod, all green"; a sign-off: "done for tonight", "night"), the
task is finished and says so. A host's summary or session title stands in only when the window
holds nothing of the human's, and then only its goal sentence. Pasted output (log lines,
tables, code) is never a sentence; an insult around a request is passed over for the request.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from assembler.transcripts.message import ELISION, Message, Summary
from assembler.words import CODE_BLOCK, content_words

# How much is looked at: a few dozen short texts.
MAX_TURNS = 12  # the newest human turns whose sentences are candidates
MAX_PER_TURN = 6  # sentences per turn: the first five and the last (a paste sits between)
SENTENCE_CHARS = 200
MAX_WORDS = 25  # a Working on line is one sentence of at most this many words
# A request with fewer specific words (or, in a script without spaces, characters) only points
# back at an older one.
SPECIFIC_WORDS = 2
SPECIFIC_CHARS = 4
# A statement with a sentence of this many content words or more says what the work is.
REPORT_WORDS = 4

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])|\s*\n+\s*")
# Characters of prose; a line with many others (digits, braces, slashes) is a pasted log.
_PROSE_CHARS = frozenset(",.;:!?'\"()-`#@&%/，。！？、：；（）“”‘’「」『』《》")
_PROSE_SHARE = 0.8
_COLUMNS = re.compile(r"\S( {3,}|\t)\S")  # aligned columns: a table a command printed
_PLAIN_WORD = re.compile(r"[(\"'`]*(?:[A-Za-z][A-Za-z'’-]*|\d+)[.,;:!?)\"'`]*")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*[A-Za-z0-9]|[A-Za-z]")
# A summary's goal that says none is known ("(none)", "...", "N/A").
_PLACEHOLDER = re.compile(r"[\W_]*(?:none|n/?a|tbd|unknown|nothing)?[\W_]*", re.IGNORECASE)
_GOAL = re.compile(r"^#+\s*Goal\s*\n+\s*(?:[-*]\s*)?(.+)$", re.M | re.I)
_INTENT = re.compile(r"Primary Request and Intent:?\**\s*\n?\s*(?:[-*]\s*)?(.+)$", re.M | re.I)
# A log line a tool printed: "[theme] Detected ...", "key: 'value'", "ERROR ...", a path.
_LOG_LINE = re.compile(
    r"^(?:\[[\w .:-]{1,24}\]\s|[\w.-]{1,30}:\s*['\"{\[/]|(?:ERROR|WARN|INFO|DEBUG|FATAL)\b"
    r"|[~.]?/[\w.-]+/[\w./-]*\s*$|\S+=\S+(?:\s+\S+=\S+)+)"
)
# Scripts written without spaces between words: their characters stand for words.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

# Turns that are no task. Matched against the whole turn, lowercased, punctuation trimmed:
# acknowledgements and short replies (`_ACK`: an answer when they follow a question) and
# thanks, greetings and nudges (`_THANKS`: never an answer), in the hosts' users' languages.
_ACK_WORDS = (
    r"ok(?:ay)?|k|kk|yes|yep|yeah|ya|no|nope|nah|sure|cool|nice|great|awesome|perfect|good|"
    r"got it|sounds good|lgtm|not yet|go|go on|continue|go ahead|do it|proceed|both|neither|"
    r"ja|nein|genau|passt|super|gut|weiter|mach weiter|mach das|klar|"
    r"sí|si|vale|claro|dale|bueno|perfecto|de acuerdo|adelante|sigue|continúa|"
    r"oui|non|d'accord|parfait|vas-y|continue|ok pour moi|"
    r"sim|não|nao|beleza|perfeito|pode|pode sim|manda|bora|нет|да"
)
_THANKS_WORDS = (
    r"hi|hey|hello|yo|hallo|moin|servus|test(?:ing)?|ping|thanks?(?: you)?(?: so much)?|thx|ty|"
    r"cheers|danke(?: schön| sehr)?|vielen dank|gracias|muchas gracias|merci(?: beaucoup)?|"
    r"obrigad[oa]|valeu|grazie|спасибо|hola|buenas|buenos días|bonjour|salut|olá|ola|oi|ciao|"
    r"bom dia|boa tarde|boa noite|buenas noches|bonsoir|"
    r"no reply|any update|status|how'?s it going|are (?:you|u) there|u there|still there|"
    r"how much longer|"
    r"what(?:'s| is) the status|you there"
)
_ACK = re.compile(rf"^(?:(?:{_ACK_WORDS})[\s!.?,]*)+$")
_FILLER = re.compile(
    rf"^(?:(?:{_ACK_WORDS}|{_THANKS_WORDS})[\s!.?,]*)+$"
    # a greeting to the agent by name: "Hello Jarvis."
    r"|^(?:hi|hey|hello|hallo|hola|bonjour|olá|oi|good (?:morning|evening|afternoon)|"
    r"guten (?:morgen|tag|abend)|moin)[\s,]+[\w-]+[\s!.]*$"
)
_THANKS_CJK = (
    r"你好|您好|嗨|哈喽|谢谢|多谢|感谢|辛苦了|谢啦|nihao|ありがとう(?:ございます)?|どうも|"
    r"こんにちは|こんばんは|おはよう(?:ございます)?|在吗|没回复|没回复了|为什么没回复|怎么样了|"
    r"可以了吗|评估的怎么样了|嘿嘿|哈哈"
)
_ACK_CJK = r"好的|好|是的|是|对|嗯|可以|需要|行|继续|はい|了解|うん|いいよ|お願いします"
_FILLER_CJK = re.compile(rf"^(?:{_THANKS_CJK}|{_ACK_CJK})+[\s!.?,，。！？、啊呢吧了～~]*$")
_ACK_CJK_ONLY = re.compile(rf"^(?:{_ACK_CJK})+[\s!.?,，。！？、啊呢吧了～~]*$")
# A choice from the agent's numbered list: "2", "option b", "the second one".
_CHOICE = re.compile(
    r"^(?:option |choice |nr\.? |#)?(?:\d{1,2}|[a-e])[).]?$|^(?:the )?(?:first|second|third|"
    r"last|other) one$",
    re.IGNORECASE,
)
# What a short answer names that a remark does not: a path, a file, a number, an identifier.
_NAMED = re.compile(r"[/\\_]|\w\.\w|\d|\w-\w")
_MENU_LINE = re.compile(r"^\s*(?:\d{1,2}|[a-eA-E])[.)]\s+\S", re.MULTILINE)

# A turn or sentence that ends the session or says the work is over.
_SIGN_OFF = re.compile(
    r"\b(?:good ?night|night|bye|goodbye|see you|talk tomorrow|(?:i'?m )?off to bed|"
    r"signing off|calling it a (?:day|night)|done (?:for|with\b.*\bfor) (?:today|tonight|now|"
    r"the day|the night)|that'?s (?:all|it)(?: for (?:now|today|tonight))?|we'?re good"
    r"(?: (?:as of |for )now)?|all set|nothing else|gute nacht|feierabend|das war'?s|"
    r"tschüss|bis morgen|(?:session|für heute)\b.{0,40}\bbeenden|morgen (?:früh )?(?:weiter|"
    r"starten|machen)|(?:continue|pick (?:this|it) up) tomorrow)\b|晚安|再见|拜拜|先这样|就这样|"
    r"没事了|明天再|おやすみ|お疲れ|^/(?:exit|quit)$|"
    # a deferral of what is left: "can it all wait till tomorrow?", "leave it for the weekend"
    r"\b(?:wait|leave it|keep it|park it|pick (?:it|this) up) (?:all )?(?:till|until|for) "
    r"(?:tomorrow|the weekend|monday|next week|later)\b",
    re.IGNORECASE,
)
# An outcome said in the human's words: the task went through.
_OUTCOME = re.compile(
    r"\b(?:is|are|was|went|got) (?:through|live|green|fixed|merged|deployed|working|fine|done|"
    r"resolved|back)\b|\ball (?:green|good|done|fixed)\b|\b(?:works|passes|fixed) now\b|"
    r"\bis on prod\b|\bit works\b|\b(?:is|are) (?:fast|quick|stable|healthy|up|running|"
    r"clean|ok|okay|good) (?:now|again)\b|\bfunktioniert (?:jetzt|wieder)\b|搞定|好了|解决了",
    re.IGNORECASE,
)
# A slash command the human ran in a host ("/init", "/review 42").
_SLASH_COMMAND = re.compile(r"^/[a-z][\w:-]*(?:\s|$)")
# Verbs a request opens with (the imperative of English and German work talk).
_VERBS = (
    "add adjust allow analy[sz]e apply archive ask assign automate back backup book bump build "
    "bundle call cancel change check clean clear clone close collect combine commit compare "
    "compile compress configure confirm connect continue convert copy correct count create "
    "cut debug decide delete deploy describe design disable document download drop dump edit "
    "email enable estimate evaluate explain export extract feed fetch fill filter find finish "
    "fix flag follow force format forward generate get give go grab group handle help hide "
    "highlight ignore implement import improve include increase install integrate investigate "
    "keep kill label launch let limit link list load lock log look lower make mark measure "
    "merge migrate mock monitor mount move name note notify open optimi[sz]e order organi[sz]e "
    "pack paste patch pause pick pin ping plan play plot point port post prepare print "
    "prioriti[sz]e profile prune publish pull push put query raise read rebase rebuild recover "
    "record redeploy redo reduce refactor refresh register reinstall reject release reload "
    "remember remind remove rename reopen reorder repair repeat replace reply report request "
    "rerun reset resize resolve restart restore resume retry return revert review revoke "
    "rewrite roll rotate run save scan schedule search send set setup share ship show shut sign "
    "simplify skip sort speed split squash start stop store summari[sz]e support swap switch "
    "sync tag take tell test tidy time toggle track train transfer translate trigger trim try "
    "tune turn type undo uninstall unlock unpin update upgrade upload use validate verify view "
    "wait watch wipe write zip "
    "untersuche prüfe überprüfe füge erstelle schreib schreibe zeig zeige implementiere behebe "
    "ändere lösche installiere starte teste finde baue mach mache hilf erkläre sag sage gib "
    "richte stelle setze aktiviere deaktiviere speichere sende öffne schließe"
).split()
# How a request opens, after a topic ("back to invoices:") or a discourse marker ("next:", "ok
# so"): an imperative, a polite form, an expectation or a decision, or a question word.
_REQUEST_OPENING = re.compile(
    r"^(?:[\w' -]{1,30}:\s+)?"
    r"(?:(?:next|also|now|then|ok(?:ay)?|so|and|but|btw|pls|please|bitte|und|dann|jetzt|yes|"
    r"yeah|yep|no|nope|ja|nein)(?: and)?[:,.]?\s+)*"
    r"(?:please|pls|can you|could you|would you|will you|can we|could we|let'?s|let us|"
    r"i (?:want|need|would like|'d like|expect|would expect|'d expect)|we need|we should|"
    r"it should|should|make sure|don'?t|do not|never|always|only|decided|"
    r"(?:you|we) (?:should(?:n'?t)?(?: have)?|must(?:n'?t)?|need to|have to)|we(?:'ll| will)? go "
    r"with|go with|ship it|kannst du|könntest du|kannst|lass uns|ich (?:möchte|will|brauche|"
    r"würde erwarten|erwarte)|es sollte|merk dir|"
    r"(?:what|why|how|where|when|who|which|whose|is|are|was|were|do|does|did|can|could|"
    r"would|will|shall|have|has|any|was|wie|warum|wieso|weshalb|wo|wann|wer|welche[rsnm]?|"
    r"gibt es|hast du|ist|sind)\b|"
    r"(?:" + "|".join(_VERBS) + r")\b"
    # a verb that is the sentence's subject ("search is fast now") asks nothing
    r"(?!\s+(?:is|are|was|were|has|have|had|keeps|works|does|doesn't|isn't|aren't|won't|"
    r"can't|'s)\b))",
    re.IGNORECASE,
)
_REQUEST_CJK = re.compile(
    r"帮我|给我|请|你可以|你能|能不能|可不可以|我要|我想|我希望|我需要|需要你|记录|更新|添加|打开|"
    r"写|查|分析|评估|检查|报告|执行|设置|删除|整理|发送|告诉|讲|推送|提交|修复|确认|使用|用|把|让|"
    r"吗|呢|怎么|"
    r"什么|为什么|哪|多少|几|是否|ください|して|お願い|ですか|ますか|何|どう"
)
# A problem reported is a request for help ("the deploy keeps failing on the migration").
_PROBLEM = re.compile(
    r"\b(?:fail(?:s|ed|ing|ure)?|broken|breaks|crash(?:es|ed|ing)?|errors?|exception|"
    r"doesn'?t work|not working|won'?t (?:start|build|load|run)|stuck|hangs?|hanging|"
    r"timed? out|times out|refused|denied|regress\w*|funktioniert nicht|geht nicht|fehler|"
    r"keeps? (?:saying|doing|sending|writing|using|calling|adding|asking|getting|giving)|"
    r"kaputt|abgestürzt|hängt)\b|不对|失败|报错|不行|没反应|挂了|エラー",
    re.IGNORECASE,
)
# Words that ask nothing specific: a request made only of them points back at an older one.
_GENERIC = frozenset(
    """fix finish task merge check investigate look continue help issue problem thing stuff
    please again done work works working issue error solve solution better idea bitte
    untersuche das dies""".split()
)
# Insults and swearing: a sentence of them besides a request is not the request.
_INSULT = re.compile(
    r"\b(?:fuck\w*|shit\w*|stupid|idiot\w*|dumb|moron\w*|useless|damn\w*|wtf|crap\w*|"
    r"bullshit|scheiße|scheisse|blöd\w*)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Candidate:
    """One sentence of a human turn."""

    text: str
    message: int  # the index of its message
    turn: int  # the index of its turn among the human turns looked at
    substantive: bool


@dataclass
class TaskChoice:
    """The sentence that says the current task, and the newest topic when it is another."""

    working_on: str | None  # one sentence, clipped to MAX_WORDS
    message: int | None  # the index of the message it comes from (None: a summary, or none)
    from_summary: bool
    last_sentence: str | None  # the newest substantive sentence, when not the task's turn
    explain: list[str] = field(default_factory=list)
    finished: bool = False  # the human's last word says the task is done (or the day is)
    # The agent's question the line answers, when the line is a short answer ("yes", "2").
    answering: str | None = None


@dataclass(frozen=True)
class _Turn:
    """A human turn as the task sees it."""

    message: int
    sentences: list[str]
    kind: str  # "request", "statement", "outcome", "sign-off", "filler"
    text: str = ""
    agent: str = ""  # the agent's message the turn follows ("" when it follows none)

    @property
    def asked(self) -> str | None:
        """The agent's question (or numbered list) the turn follows, when it does."""
        return _question(self.agent) if self.agent else None


# A short turn after the agent's question is the human's answer: a choice that belongs with the
# question ("which calendar?" "Apple Calendar"; "shall I push?" "yes").
_ANSWER_WORDS = 5
_ANSWER_CHARS = 12


def current_task(messages: Sequence[Message], summaries: Sequence[Summary]) -> TaskChoice:
    """Given the recent messages (oldest first) and the hosts' summaries (oldest first), return
    the human's current work (see the module's description).
    """
    turns = _turns(messages)
    explain: list[str] = []
    closing: _Turn | None = None
    for position in range(len(turns) - 1, -1, -1):
        turn = turns[position]
        question = _answered(turn)
        if question is not None and closing is None:
            answer = clip_words(" ".join(turn.sentences) or turn.text.strip(), _ANSWER_WORDS * 2)
            explain.append(f"working on: a short answer to the agent's {clip_words(question, 8)!r}")
            return TaskChoice(answer, turn.message, False, None, explain, answering=question)
        if turn.kind == "filler" or (turn.kind == "statement" and not _telling(turn)):
            continue
        if turn.kind in ("outcome", "sign-off"):
            # An outcome says more than the sign-off after it ("all green" ... "night").
            if closing is None or (turn.kind == "outcome" and closing.kind == "sign-off"):
                closing = turn
            continue
        if turn.kind == "statement" and closing is None:
            line = _report_line(turn)
            explain.append(f"working on: the human's newest report {clip_words(line, 8)!r}")
            return TaskChoice(clip_words(line, MAX_WORDS), turn.message, False, None, explain)
        if turn.kind == "statement":
            continue  # what they said before the task was closed
        sentence = _request_sentence(turn.sentences)
        line = sentence
        if not _specific(sentence):
            said = [s for s in turn.sentences if s != sentence and _specific(s)]
            older = said[-1] if said else _older_specific(turns[:position], sentence)
            if older is not None:
                line = f"{older} → {sentence}"
        explain.append(
            f"working on: the human's latest request {clip_words(sentence, 8)!r}"
            + (f", closed by {clip_words(' '.join(closing.sentences), 6)!r}" if closing else "")
        )
        if closing is not None and closing.kind == "outcome":
            outcome = next(s for s in closing.sentences if _OUTCOME.search(_unquoted(s)))
            return TaskChoice(
                clip_words(outcome, MAX_WORDS), closing.message, False, None, explain, True
            )
        return TaskChoice(
            clip_words(line, MAX_WORDS), turn.message, False, None, explain, closing is not None
        )
    for summary in reversed(summaries):
        line = summary_line(summary.text)
        if line:
            explain.append(f"working on: no request in the window; the host's {summary.kind}")
            return TaskChoice(line, None, True, None, explain)
    if closing is not None and closing.kind == "outcome":
        outcome = next(s for s in closing.sentences if _OUTCOME.search(_unquoted(s)))
        return TaskChoice(
            clip_words(outcome, MAX_WORDS), closing.message, False, None, explain, True
        )
    return TaskChoice(None, None, False, None, explain)


def _answered(turn: _Turn) -> str | None:
    """The agent's words a turn answers: a short turn that is no thanks or greeting, after a
    message of the agent's that ends asking, lists numbered choices or offers the answer (see
    `_offered`), or a short answer that names something, after the agent's last line."""
    if not turn.agent:
        return None
    text = " ".join(turn.sentences) or turn.text.strip()
    whole = text.lower().strip().replace("’", "'")
    if not whole or len(whole) > 80:
        return None
    filler = bool(_FILLER.match(whole) or _FILLER_CJK.match(whole))
    if filler:
        # Of the filler, only an acknowledgement answers ("yes", "go"); thanks do not.
        if not (_ACK.match(whole) or _ACK_CJK_ONLY.match(whole)):
            return None
    elif not _CHOICE.match(whole) and not _short(text):
        return None
    if turn.kind in ("request", "outcome", "sign-off") and not _CHOICE.match(whole):
        return None  # it asks or closes something of its own
    asked = turn.asked or _offered(turn.agent, whole)
    if asked is None and not filler and turn.kind == "statement" and _NAMED.search(whole):
        # a path, a file or a number after the agent's last words ("the file to audit, e.g.
        # ..."): what it answers is what the agent said last, asked or not ("hmm" is a remark)
        asked = _last_line(turn.agent)
    if asked is None:
        return None  # an "ok" after a report answers nothing: the task is older
    return _options(turn.agent, text) or asked


def _offered(agent: str, answer: str) -> str | None:
    """The last line of the agent's message that offers the answer as an option, marked off
    ("(`y` / `n`)", "[oui]", "reply 'go'"), or None."""
    bare = answer.strip(" .!")
    if not bare or len(bare) > 20:
        return None
    mark = rf"(?<![\w]){re.escape(bare)}(?![\w])"
    offer = re.compile(rf"[`'\"“‘(\[/|]\s*{mark}\s*[`'\"”’)\]/|]", re.IGNORECASE)
    lines = [line.strip() for line in agent[-1500:].splitlines() if line.strip()]
    return next((line for line in reversed(lines) if offer.search(line)), None)


def _last_line(agent: str) -> str | None:
    """The agent's last line of prose, or None."""
    said = sentences(agent[-1500:])
    return said[-1] if said else None


def _options(agent: str, answer: str) -> str | None:
    """The items of the agent's list an answer picks by their marks ("2", "1 + 2", "CR" for a
    line "[CR] Code review"), joined; None when it picks none."""
    marks = re.findall(r"[A-Za-z0-9]{1,4}", answer)
    if not marks or len(marks) > 3 or len(answer) > 20:
        return None
    picked: list[str] = []
    for mark in marks:
        item = re.search(
            rf"^[ \t]*(?:[-*][ \t]*)?(?:\d{{1,2}}[.)][ \t]+)?[\[(*`]*{re.escape(mark)}[\])*`]*"
            rf"[.):\-–—]*[ \t]+(\S[^\n]*)$",
            agent[-3000:],
            re.MULTILINE | re.IGNORECASE,
        )
        if item is None:
            return None
        picked.append(item.group(1).strip(" *`"))
    return "; ".join(picked)


def _short(text: str) -> bool:
    if _CJK.search(text):
        return len(text.strip()) <= _ANSWER_CHARS
    return len(text.split()) <= _ANSWER_WORDS


def _telling(turn: _Turn) -> bool:
    """Whether a statement says what it is about: a sentence of `REPORT_WORDS` content words
    or more ("after the change the timeout still shows up once in ten runs"), not a remark
    ("hmm", "I see", "long day, I'm fried")."""
    return any(_specific(s) and _weight(s) >= REPORT_WORDS for s in turn.sentences)


def _report_line(turn: _Turn) -> str:
    """The line of a turn that tells rather than asks: its sentence that says the most (the
    most content words; of equals, the later: people give the context first), and the
    sentence after it while the line has room."""
    said = [s for s in turn.sentences if _specific(s) and _weight(s) >= REPORT_WORDS]
    best = max(range(len(said)), key=lambda i: (_weight(said[i]), i))
    line = said[best]
    if best + 1 < len(said) and len(f"{line} {said[best + 1]}".split()) <= MAX_WORDS:
        line = f"{line} {said[best + 1]}"
    return line


def _weight(sentence: str) -> int:
    """How much a sentence says: its content words, or in a script without spaces its
    characters of words, two to a word."""
    return max(len(content_words(sentence)), len(_CJK.findall(sentence)) // 2)


def _turns(messages: Sequence[Message]) -> list[_Turn]:
    """The newest human turns, oldest first, each with its sentences and its kind."""
    human = [i for i, m in enumerate(messages) if m.role == "user"][-MAX_TURNS:]
    found: list[_Turn] = []
    for index in human:
        said = sentences(messages[index].text)
        if len(said) > MAX_PER_TURN:
            said = [*said[: MAX_PER_TURN - 1], said[-1]]
        before = messages[index - 1] if index > 0 else None
        agent = before.text if before is not None and before.role == "assistant" else ""
        text = messages[index].text
        found.append(_Turn(index, said, _kind(text, said), text, agent))
    return found


def _question(text: str) -> str | None:
    """The question a message of the agent's ends with (its last sentence of prose, or the one
    before a numbered list of choices at its end), or None."""
    tail = text[-1500:]
    said = sentences(tail)
    if said and said[-1].rstrip().endswith(("?", "？")):
        return said[-1]
    if len(_MENU_LINE.findall(tail)) >= 2:
        asking = [s for s in said if s.rstrip().endswith(("?", "？"))]
        asking = asking or [s for s in said if s.rstrip().endswith(":")]
        return asking[-1] if asking else (said[-1] if said else None)
    return None


def _kind(text: str, said: Sequence[str]) -> str:
    """Given a human turn's text and its sentences of prose, return what the turn is."""
    whole = " ".join(said).strip().lower().replace("’", "'")
    if not whole or _FILLER.match(whole) or _FILLER_CJK.match(whole):
        return "filler"
    asks = [s for s in said if _asks(s) and not _insult_only(s)]
    outcomes = [i for i, s in enumerate(said) if _OUTCOME.search(_unquoted(s))]
    last_ask = max((i for i, s in enumerate(said) if s in asks and _specific(s)), default=-1)
    if outcomes and last_ask < outcomes[-1]:
        return "outcome"  # a new task after the outcome, in the same turn, is a request
    if _SIGN_OFF.search(whole) and not any(_specific(s) for s in asks):
        return "sign-off"
    if asks or any(_PROBLEM.search(s) and _specific(s) for s in said):
        return "request"
    return "statement"


def _asks(sentence: str) -> bool:
    """Whether a sentence asks something of the agent: a question or a request (not one it
    quotes)."""
    stripped = _unquoted(sentence).strip()
    if stripped.endswith(("?", "？")) or _REQUEST_OPENING.match(stripped):
        return True
    if _SLASH_COMMAND.match(stripped):
        return True
    return bool(_CJK.search(stripped) and _REQUEST_CJK.search(stripped))


def _insult_only(sentence: str) -> bool:
    """Whether a sentence is an insult or swearing with next to nothing else in it."""
    if not _INSULT.search(sentence):
        return False
    rest = [w for w in content_words(_INSULT.sub(" ", sentence)) if w.lower() not in _GENERIC]
    return len(rest) < SPECIFIC_WORDS


def _specific(sentence: str) -> bool:
    """Whether a request says what it is about, rather than pointing back ("fix it")."""
    if len(_CJK.findall(sentence)) >= SPECIFIC_CHARS:
        return True
    words = [w for w in content_words(sentence) if w.lower() not in _GENERIC]
    return len(words) >= SPECIFIC_WORDS or any(c.isdigit() for c in sentence)


def _request_sentence(said: Sequence[str]) -> str:
    """The sentence of a request turn that asks: the first that asks and is specific, else the
    first that asks, else the problem it reports."""
    asks = [s for s in said if _asks(s) and not _insult_only(s)]
    specific = [s for s in asks if _specific(s)]
    problems = [s for s in said if _PROBLEM.search(s) and _specific(s)]
    return (specific or asks or problems or list(said))[0]


def _older_specific(turns: Sequence[_Turn], vague: str) -> str | None:
    """The older specific request a vague one points back to: the newest that shares a word
    with it ("why is it still failing" → the failing deploy), else the newest."""
    found: list[str] = []
    for turn in reversed(turns):
        if turn.kind == "request":
            found += [
                s for s in turn.sentences if (_asks(s) or _PROBLEM.search(s)) and _specific(s)
            ]
    if not found:
        return None
    said = _stems(vague)
    return next((s for s in found if said & _stems(s)), found[0])


def _stems(text: str) -> set[str]:
    """The words of a text, lowercased, without their common endings ("failing" → "fail")."""
    stems: set[str] = set()
    for word in re.findall(r"[a-zäöüß]{3,}", text.lower()):
        for suffix in ("ing", "ed", "es", "s"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        if word not in _STEM_STOPWORDS:
            stems.add(word)
    return stems


# Words two requests share without being about the same thing.
_STEM_STOPWORDS = frozenset("the and you can this that with why what how still again it".split())


def summary_line(text: str) -> str:
    """Given a host's summary or title, return its one line about the task: the line under a
    'Goal' heading (OpenClaw), after 'Primary Request and Intent' (Claude Code), else its first
    sentence; clipped to MAX_WORDS."""
    for pattern in (_GOAL, _INTENT):
        match = pattern.search(text)
        if match and _PLACEHOLDER.fullmatch(match.group(1).strip()):
            return ""  # the summary says it knows no goal
        if match:
            return clip_words(match.group(1).strip(), MAX_WORDS)
    found = sentences(text)
    return clip_words(found[0], MAX_WORDS) if found else ""


def sentences(text: str) -> list[str]:
    """Given a message's text, return its sentences of prose: no code blocks, no lines of a
    pasted log (mostly digits and symbols), each clipped to SENTENCE_CHARS. A quotation within
    a line is part of the sentence that quotes it: in 'You keep saying this "... Do not mimic
    this format."' the human asks nothing of the agent with the quoted words."""
    plain = CODE_BLOCK.sub("\n", text.replace(ELISION, "\n"))
    plain = _QUOTATION.sub(lambda quoted: _QUOTED_END.sub(_HELD_SPACE, quoted.group(0)), plain)
    found: list[str] = []
    for part in _SENTENCE_END.split(plain):
        part = part.replace(_HELD_SPACE, " ").strip().lstrip("-*>#").strip()
        if part and _is_prose(part):
            found.append(part[:SENTENCE_CHARS])
    return found


def _unquoted(sentence: str) -> str:
    """A sentence without the quotations in it: what the human says in their own words."""
    return _QUOTATION.sub(" ", sentence)


# A quotation on one line, in straight or curly double quotes, and the sentence ends inside it,
# held together by a character no message has (a private-use one) while the text is split.
_QUOTATION = re.compile(r'"[^"\n]{12,}"|“[^”\n]{12,}”')
_QUOTED_END = re.compile(r"(?<=[.!?])\s+")
_HELD_SPACE = "\ue000"


def _is_prose(text: str) -> bool:
    """Whether a line is prose: most of its characters, or most of its words, are those of
    words, and it is not in aligned columns (a sentence that names one long token is prose; a
    log line or a table is not)."""
    if not any(c.isalpha() for c in text) or _COLUMNS.search(text) or _LOG_LINE.match(text):
        return False
    # In a script without spaces a number is part of the sentence ("给 1314013这个用户").
    numbers_are_words = bool(_CJK.search(text))
    plain = sum(
        1
        for c in text
        if c.isalpha() or c.isspace() or c in _PROSE_CHARS or (numbers_are_words and c.isdigit())
    )
    tokens = text.split()
    words = sum(1 for token in tokens if _PLAIN_WORD.fullmatch(token))
    return plain >= _PROSE_SHARE * len(text) or words >= _PROSE_SHARE * len(tokens)


def clip_words(text: str, limit: int) -> str:
    """Given a sentence, return it with at most `limit` words, cut at a word boundary; a text
    in a script without spaces keeps about three characters a word."""
    words = text.split()
    if len(_CJK.findall(text)) > len(words) * 4:
        chars = limit * 3
        return text if len(text) <= chars else text[:chars].rstrip("，、,;:-") + "…"
    if len(words) <= limit:
        return " ".join(words)
    return " ".join(words[:limit]).rstrip(",;:-") + "…"
