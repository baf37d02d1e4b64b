"""The lexicons of the mood model's rule layer: for each rule mood, the regular expressions that
are its evidence, the literals a text must contain for them to be tried, and the directions its
hits move arousal and valence; and the functions that read them (`rule_hits`) and name them
(`lexicons_fingerprint`).

The rules cover moods that the training data does not label (urgent, tired), labels in another
domain (frustration at a failure that persists, as in a coding session, or aimed at the agent:
Reddit has almost none; the joy of a thing that finally works, praise of the agent in slang) or in
no other language than English (German and Chinese words of frustration, joy, thanks, sorrow and
worry; Spanish, French and Japanese complaints, swearing and worry; fatigue in all five: the
embedding model reads English only). Each pattern that matches is one hit; how hits weigh in a
message's mood is the scorer's (`assembler.mood.model`).
"""

from __future__ import annotations

import hashlib
import json
import re

_APOS = "['’]"
# "not urgent", "anything else urgent?", "is it urgent?" ask or deny, they do not press
_NOT_PRESSING = "".join(
    f"(?<!\\b{w} )" for w in ("not", "no", "nothing", "anything", "else", "non", "it", "that")
)
URGENT_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\basap\b",
        _NOT_PRESSING + r"(?<!\bnon-)\burgent(ly)?\b",
        # a bare "right now" is mostly temporal ("busy right now"); shouted or asked for, it is not
        r"\bright (now|away)\s*!",
        r"\b(need|needs|want|wants)\s+(this|it|that|them)\s+(done\s+|fixed\s+|merged\s+|"
        r"deployed\s+|back\s+up\s+)?(right\s+)?(now|today|tonight|asap)\b",
        r"\b(fix|revert|stop|deploy|roll ?back|restart|respond|do|check|look at)\b[^.?!\n]{0,30}"
        r"\b(immediately|right away|right now)\b",
        r"\bdeadlines?\b",
        r"\b(an emergency|emergency (fix|deploy|release|patch|rollback))\b",
        r"\b(prod|production|site|server|service|website|app|api|db|database|cluster)"
        r"\s+(is\s+|went\s+|goes\s+|are\s+)?(down|on fire)\b",
        r"\boutage\b",
        r"\bhurry\b",
        r"\b(by|before)\s+(eod|end of (the )?day|tonight|noon|tomorrow morning)\b",
        r"\btime[- ]sensitive\b",
        r"\bcritical (bug|issue|incident|error|fix)\b",
        r"\b(release )?blocker\b",
        r"\b(sev ?[01]|p0)\b",
        r"(?<!in )\bno time\b|\b(running|run|ran) out of time\b",
    )
)
TIRED_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # "tired of X" and "sick and tired" are frustration, not fatigue
        r"(?<!sick and )\btired\b(?! of)",
        r"\bexhaust(ed|ing)\b",
        r"\blong (day|night|week|shift)\b",
        # "can't think of an example" is not fatigue
        rf"\b(can{_APOS}?t|cannot|can not) think( straight| clearly| anymore)?\b(?! of)",
        r"\bneed (some )?sleep\b",
        r"\b(sleepy|drowsy|knackered|fatigued)\b",
        r"\b(worn|wiped|burn(ed|t)) out\b",
        rf"\b(i{_APOS}?m|i am|feel(ing)?)\s+(so\s+|totally\s+|completely\s+)?"
        r"(fried|beat|spent|wrecked|zonked)\b",
        r"\bdrained\b",
        r"\b(no|little|barely any|zero) sleep\b",
        r"\bbrain (is )?(fried|mush)\b",
        r"\bbarely awake\b",
        r"\bkeep my eyes open\b",
        r"\bup all night\b",
        r"\ball[- ]nighter\b",
        r"\byawn",
        r"\bzzz+\b",
        # A goodnight, or going to bed: the day is over for the human (a whole message of it;
        # "the night build" is not one).
        r"^\W*(good\s*)?(night|nite|nighty[- ]night|gn)\W*$",
        r"\b(going|off|heading|head|go) to (bed|sleep)\b|\bcalling it a (day|night)\b|"
        r"\bhit the (sack|hay)\b",
    )
)
_FAILING = (
    rf"(broken|failing|fails|failed|crash(es|ed|ing)?|wrong|not working|doesn{_APOS}?t work|"
    rf"does not work|won{_APOS}?t work|erroring|errors out)"
)
FRUSTRATED_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"\b(still|again|keeps?|kept)\b[^.?!\n]{{0,30}}\b{_FAILING}\b",
        rf"\b{_FAILING}\b[^.?!\n]{{0,20}}\b(again|still)\b",
        # Chat shorthand for exasperation, rare in the Reddit training data's labelled rows.
        r"\b(ffs|wtf|omfg|jfc|fml|ugh+|argh+)\b",
        rf"\bfor (fuck|god|christ|pete){_APOS}?s sake\b",
        r"\bseriously\s*[?!]",
        r"\b(are|r) (you|u) (kidding|serious)\b",
        r"\b(third|fourth|fifth|umpteenth|nth) time\b|\bhow many times\b",
        # "the second time I ran it" is plain; a failure back again within a span is not
        r"\b(second|2nd) time (today|tonight|this (morning|week|month|year)|in a row)\b",
        # A shouted "WHY" is exasperation, not a question ((?-i:) keeps this one case-sensitive).
        r"(?-i:\bWHY\b)",
    )
)
# The extended lexicons (`rule_hits(extended=True)`) of the model with the embedding head; the
# n-gram model alone keeps the rules above, as it was trained and benchmarked with them.
FRUSTRATED_EXTRA_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # Insults and reproaches aimed at the agent: Reddit's annotators read "are you stupid?"
        # as a question as often as as anger.
        r"\b(you|u)\s+(absolute\s+|complete\s+|total\s+|fucking\s+|stupid\s+|useless\s+)*"
        r"(idiot|moron|imbecile|clown|dumbass|muppet|dimwit|halfwit|nitwit|fool|numpty)s?\b",
        rf"\b(you{_APOS}?re|you are|ur|are you|r u)\s+(so\s+|such an?\s+|an?\s+|really\s+|"
        r"fucking\s+|completely\s+|totally\s+|just\s+|even\s+)*(stupid|dumb|useless|incompetent|"
        r"brain ?dead|an idiot|a moron|blind|deaf|clueless|trolling|dense|thick|daft|hopeless|"
        r"a joke)\b",
        r"\bwhat the (hell|heck|fuck|f)\b",
        r"\b(ridiculous|absurd|unacceptable|pathetic|infuriating|frustrating|annoying)\b",
        rf"\b(you|u) (shouldn{_APOS}?t|should not|were not supposed to|weren{_APOS}?t supposed to) "
        r"have\b",
        r"\byou keep (\w+ing)\b|\bhow hard (can|could|is) (it|this|that)\b",
        rf"\b(i{_APOS}?ve|i have|i) already (told|said|asked|explained)\b|\bi told you\b",
        # a nudge after the agent went quiet
        r"\b(still |again |why )?no (reply|response|answer)\s*\?",
        # a reproach put as a question
        rf"\b(did|have) (you|u) not\b|"
        rf"\bwhy (didn{_APOS}?t|did not|haven{_APOS}?t|have not) (you|u)\b",
        # German
        r"\b(frustrier\w*|nervig|nervt|ärgerlich|verdammt\w*|mist|schei(ß|ss)e?\w*|kacke|"
        r"lächerlich|unfassbar)\b",
        r"\b(schon wieder|immer noch nicht|was soll (das|der)|wie oft noch)\b",
        r"\b(bist du|du bist)\s+(\w+\s+)?(blöd|dumm|taub|blind|ein idiot)\b",
        # Chinese (no word boundaries: its characters are all word characters)
        r"又(错|坏|失败|不行|崩|报错|挂|出问题)|还是(不行|不对|错|没|失败|报错)|怎么(又|还是)",
        r"气死|烦死|烦人|搞什么|什么鬼|无语|垃圾|卧槽|说了(多少|几|好几)[遍次]|你是不是(傻|笨|有病)",
        r"没(回复|回应)|(都|全|完全|根本)不对",
        # Spanish
        r"\b(mierda|joder|jodid[oa]s?|cabrón|coño|hostia|carajo|puta madre|qué asco|"
        r"una porquería|ridícul[oa]|indignante|frustrante)\b",
        r"\bsiguen? sin (funcionar|andar|servir|arrancar)\b|\b(otra vez|de nuevo|todavía|aún)\b"
        r"[^.?!\n]{0,20}\bno (funciona|va|anda|sirve|arranca)\b|"
        r"\b(estoy|me tienes|me tiene) (\w+ )?(hart[oa]|frustrad[oa]|cabread[oa])\b|"
        r"\bcuántas veces\b|\b(¿)?en serio\s*[?!]",
        # French
        r"\b(putain|merde|bordel|fait chier|chiant\w*|énervant\w*|ras[- ]le[- ]bol|"
        r"c'est n'importe quoi|c'est nul|ridicule|inadmissible|frustrant\w*|agaçant\w*)\b",
        r"\b(j'en ai marre|j'en peux plus|ça (ne )?(marche|fonctionne) (toujours|encore) pas|"
        r"(toujours|encore) (pas|en panne|cassé)|combien de fois|sérieux\s*[?!]|"
        r"(t'es|tu es) (vraiment |complètement )?(con|nul|idiot|stupide|bête))\b",
        # Japanese (no word boundaries)
        r"(また|まだ)(エラー|壊れ|動かな|落ち|失敗|ダメ|だめ)|何(度|回)(も)?(言|説明)|いい加減に",
        r"ふざけ(る|ん)な|クソ|くそ|最悪|ムカつ|むかつ|イライラ|うざ|話にならな",
    )
)
# Tiredness in the languages other than English (the embedding model reads English only).
TIRED_EXTRA_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # German ("kaputt" alone is a broken thing; "ich bin kaputt" is the human)
        r"\b(todmüde|hundemüde|müde|erschöpft|übermüdet)\b|\bich bin (so |total |völlig )?"
        r"(kaputt|platt)\b|\b(gute nacht|ich geh(e)? (jetzt )?(ins bett|schlafen))\b",
        # Chinese ("累计", "累加" count up)
        r"(好|太|很|有点|真)累|累(了|死|坏)|困(了|死)|好困|晚安|(去|要)睡(觉)?了|熬夜|通宵",
        # Spanish
        r"\b(cansad[oa]s?|agotad[oa]s?|rendid[oa]s?|reventad[oa]s?)\b|\btengo (mucho )?sueño\b|"
        r"\b(buenas noches|me voy a (dormir|la cama))\b",
        # French ("crevé" alone is a flat tyre)
        r"\b(fatigué(e)?s?|épuisé(e)?s?|claqué(e)?)\b|\bje suis (\w+ )?(crevé(e)?|mort(e)? de "
        r"fatigue)\b|\b(bonne nuit|je vais (me coucher|dormir|au lit))\b",
        # Japanese
        r"疲れ(た|て|まし)|つかれた|眠い|ねむい|眠たい|おやすみ|もう寝|寝ます|徹夜",
    )
)
HAPPY_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # Praise of the agent in slang, and the joy of a thing that works at last: Reddit labels
        # "you are a monster" anger.
        rf"\b(you{_APOS}?re|you are|ur)\s+(a |an |the |such a |an absolute |a fucking |one )?"
        r"(monster|beast|legend|genius|machine|star|hero|wizard|rock ?star|god|lifesaver|champ)\b|"
        r"\b(you|u)\s+(absolute\s+|fucking\s+|total\s+|beautiful\s+|magnificent\s+)?(legend|genius|"
        r"beast|wizard|hero|champ|lifesaver|rock ?star|machine|monster|king|goat)\b"
        r"(?!\s+(of|at|with|for)\b)",
        r"\b(hell|fuck|heck|oh) (yes|yeah)\b|\bnailed it\b|\bworks like a charm\b",
        r"\b(it|everything|all|that|it all|they all|the (whole )?(suite|build|pipeline|tests?))\s+"
        r"(finally\s+|now\s+|actually\s+|just\s+)*(works|worked|passes|passed)\b[^?\n]{0,30}!",
        # Swearing in joy at a thing that works
        r"\b(holy (shit|crap|cow|moly)|hell yeah|omg|oh my god)\b[^?\n]{0,40}"
        r"\b(works|worked|passes|passed|fixed|green)\b",
        # German
        r"\b(toll|klasse|genial|perfekt|wunderbar|großartig|geil|spitze|hervorragend)\b|"
        r"\bsuper\b(?=\s*([,.!]|$|dann\b|danke\b|gemacht\b|idee\b|sache\b|arbeit\b))",
        r"\bfreu(e|t|en)? (mich|uns)\b|\b(bin|sind) (schon )?(sehr |so )?gespannt\b",
        # Chinese
        r"太好了|太棒|好棒|真棒|完美|开心|高兴|哈哈|嘿嘿|挺好|不错",
    )
)
GRATEFUL_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE) for p in (r"\b(danke\w*|vielen dank)\b", r"谢谢|感谢|多谢|谢了")
)
_KIN = (
    r"(friend|mom|mum|mother|dad|father|brother|sister|wife|husband|partner|son|daughter|"
    r"grand(ma|mother|pa|father)|uncle|aunt|cousin|dog|cat|colleague|mentor)"
)
SAD_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # A death named is sorrow, whatever the message asks for ("the server died" is not one).
        rf"\b(my|our)\s+(\w+\s+)?{_KIN}s?\s+(\w+\s+)?(died|passed|is gone|was killed)\b|"
        rf"\b(lost|losing) (my|our)\s+(\w+\s+)?{_KIN}\b|"
        r"\b(passed away|funeral|condolences|griev(e|ing)|bereave\w*|memorial service)\b",
        r"\b(traurig\w*|trauer\w*|gestorben|verstorben)\b",
        r"难过|伤心|去世|过世|悲伤|哭了",
    )
)
ANXIOUS_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # "keine Sorge", "不用担心": no worry
        r"\b(angst|besorgt|nervös|beunruhigt)\b|(?<!\bkeine )\bsorgen?\b",
        r"(?<!不用)(?<!别)担心|害怕|紧张|焦虑",
        # Spanish ("no te preocupes": no worry)
        r"(?<!\bno te )(?<!\bno se )\bpreocup(a|ad[oa]s?|ante|ación)\b|\btengo miedo\b|"
        r"\b(estoy )?nervios[oa]s?\b|\bansiedad\b|\bme da miedo\b",
        # French ("ne t'inquiète pas", "pas d'inquiétude": no worry)
        r"(?<!\bne t')(?<!\bpas d')\binqui(et|ète|ets|ètes|étant|étude)\b(?! pas)|"
        r"\bj'ai (un peu |très )?peur\b|\bangoiss\w*|\bstressé(e)?s?\b",
        # Japanese ("心配しないで", "心配ない", "ご心配なく": no worry)
        r"(?<!ご)心配(?!しないで|ない|いらな|無用|なく)|不安|怖い|こわい|緊張",
    )
)

# Every pattern above contains one of these literals (lower-cased); a text with none of them
# skips the regexes, which would otherwise cost more than the model itself.
_URGENT_KEYS = (
    "asap", "urgent", "now", "right away", "immediately", "today", "tonight", "deadline",
    "emergency", "down", "on fire", "outage", "hurry", "eod", "end of", "noon",
    "tomorrow morning", "sensitive", "critical", "blocker", "sev", "p0", "time",
)  # fmt: skip
_TIRED_KEYS = (
    "tired", "exhaust", "long ", "think", "sleep", "drowsy", "knackered", "fatigued",
    "worn out", "wiped out", "burned out", "burnt out", "fried", "beat", "spent", "wrecked",
    "zonked", "drained", "brain", "awake", "eyes open", "all night", "nighter", "yawn", "zzz",
    "night", "nite", "gn", "bed", "calling it", "sack", "hay",
)  # fmt: skip
_FRUSTRATED_KEYS = (
    "still", "again", "keep", "kept", "ffs", "wtf", "omfg", "jfc", "fml", "ugh", "argh",
    "sake", "seriously", "kidding", "serious", " time", "why",
)  # fmt: skip
_FRUSTRATED_EXTRA_KEYS = (
    "you", " u ", "ur ", "r u", "what the", "ridiculous", "absurd", "unacceptable",
    "pathetic", "infuriating", "frustrating", "annoying", "already", "just", "no ", "how hard",
    "frustrier", "nervig", "nervt", "ärgerlich", "verdammt", "mist", "scheiß", "scheiss",
    "kacke", "lächerlich", "unfassbar", "schon wieder", "immer noch nicht", "was soll", "told",
    "wie oft", "du ", "又", "还是", "怎么", "气死", "烦", "搞什么", "什么鬼", "无语",
    "垃圾", "卧槽", "说了", "你是不是", "没", "不对",
    "mierda", "joder", "jodid", "cabrón", "coño", "hostia", "carajo", "puta madre", "qué asco",
    "porquería", "ridi", "indignante", "frustrante", "sigue", "hart", "frustrad", "cabread",
    "cuántas veces", "en serio",
    "putain", "merde", "bordel", "chier", "chiant", "énervant", "ras", "n'importe quoi", "nul",
    "inadmissible", "frustrant", "agaçant", "marre", "j'en peux", "toujours", "encore",
    "combien de fois", "sérieux", "t'es", "tu es",
    "また", "まだ", "何度", "何回", "いい加減", "ふざけ", "クソ", "くそ", "最悪", "ムカつ",
    "むかつ", "イライラ", "うざ", "話にならな",
)  # fmt: skip
_HAPPY_KEYS = (
    "you", "ur ", "yes", "yeah", "nailed", "charm", "work", "pass", "holy", "omg", "oh my god",
    "fixed", "green", "toll", "klasse", "genial",
    "perfekt", "wunderbar", "großartig", "geil", "spitze", "hervorragend", "super", "freu",
    "gespannt", "太好了", "太棒", "好棒", "真棒", "完美", "开心", "高兴", "哈哈", "嘿嘿",
    "挺好", "不错",
)  # fmt: skip
_TIRED_EXTRA_KEYS = (
    "müde", "erschöpft", "übermüdet", "ich bin", "gute nacht", "schlafen", "ins bett",
    "累", "困", "晚安", "睡", "熬夜", "通宵",
    "cansad", "agotad", "rendid", "reventad", "sueño", "buenas noches", "dormir", "la cama",
    "fatigu", "épuisé", "claqué", "je suis", "bonne nuit", "coucher", "au lit",
    "疲れ", "つかれ", "眠", "ねむ", "おやすみ", "寝", "徹夜",
)  # fmt: skip
_GRATEFUL_KEYS = ("danke", "vielen dank", "谢", "感谢")
_SAD_KEYS = (
    "died", "passed", "gone", "killed", "lost", "losing", "funeral", "condolences", "griev",
    "bereave", "memorial",
    "traurig", "trauer", "gestorben", "verstorben", "难过", "伤心", "去世", "过世", "悲伤", "哭了",
)  # fmt: skip
_ANXIOUS_KEYS = (
    "angst", "besorgt", "nervös", "beunruhigt", "sorge", "担心", "害怕", "紧张", "焦虑",
    "preocup", "miedo", "nervios", "ansiedad", "inqui", "peur", "angoiss", "stress",
    "心配", "不安", "怖い", "こわい", "緊張",
)  # fmt: skip
# mood, its patterns, their keys, the directions arousal and valence move when they hit
Rule = tuple[str, tuple[re.Pattern[str], ...], tuple[str, ...], float, float]
_RULES: tuple[Rule, ...] = (
    ("urgent", URGENT_PATTERNS, _URGENT_KEYS, 1.0, -1.0),
    ("tired", TIRED_PATTERNS, _TIRED_KEYS, -1.0, -1.0),
    ("frustrated", FRUSTRATED_PATTERNS, _FRUSTRATED_KEYS, 1.0, -1.0),
)
EXTENDED_RULES: tuple[Rule, ...] = (
    _RULES[0],
    ("tired", TIRED_PATTERNS + TIRED_EXTRA_PATTERNS, _TIRED_KEYS + _TIRED_EXTRA_KEYS, -1.0, -1.0),
    (
        "frustrated",
        FRUSTRATED_PATTERNS + FRUSTRATED_EXTRA_PATTERNS,
        _FRUSTRATED_KEYS + _FRUSTRATED_EXTRA_KEYS,
        1.0,
        -1.0,
    ),
    ("happy", HAPPY_PATTERNS, _HAPPY_KEYS, 1.0, 1.0),
    ("grateful", GRATEFUL_PATTERNS, _GRATEFUL_KEYS, 0.0, 1.0),
    ("sad", SAD_PATTERNS, _SAD_KEYS, -1.0, -1.0),
    ("anxious", ANXIOUS_PATTERNS, _ANXIOUS_KEYS, 1.0, -1.0),
)
RULE_MOODS: tuple[str, ...] = tuple(mood for mood, *_ in EXTENDED_RULES)
# A command about a process, a server or a table uses words that are violent elsewhere ("kill
# the process", "stop the server", "drop the table"); the embedding head's gate, trained on
# dialogue, reads them as emotion, so the scorer discounts its evidence for such a command.
CALM_COMMAND = re.compile(
    r"\b(kill|stop|abort|terminate|nuke|drop|restart|fix|remove|delete|purge|shoot|end)\s+"
    r"(the\s+|that\s+|this\s+|all\s+|those\s+|these\s+|my\s+|our\s+)?([\w.-]+\s+){0,2}"
    r"(process|processes|server|servers|job|jobs|container|containers|pod|pods|instance|"
    r"instances|table|tables|branch|branches|task|tasks|service|services|build|builds|pid|port|"
    r"session|sessions|worker|workers|thread|threads|query|queries|error|errors|bug|bugs|"
    r"test|tests|run|daemon|vm|node|nodes|cluster)\b",
    re.IGNORECASE,
)


def lexicons_fingerprint() -> str:
    """Return the SHA-256 of the extended lexicons: each rule's mood, patterns (with their
    flags), keys and directions, in order. The embedding head reads their hits as inputs, so
    its card records the fingerprint it was trained with, and an edit of a lexicon that the
    head was not retrained on fails a test."""
    rules = [
        [mood, [[p.pattern, p.flags] for p in patterns], list(keys), up, pleasant]
        for mood, patterns, keys, up, pleasant in EXTENDED_RULES
    ]
    encoded = json.dumps(rules, ensure_ascii=False, separators=(",", ":")).encode()
    return hashlib.sha256(encoded).hexdigest()


def rule_hits(text: str, *, extended: bool = False) -> dict[str, int]:
    """Given a raw text, return how many patterns of each rule mood (`RULE_MOODS`) it matches:
    of the n-gram model's rules, or with `extended` of the extended lexicons (the model with the
    embedding head)."""
    lowered = text.lower()
    hits = dict.fromkeys(RULE_MOODS, 0)
    for mood, patterns, keys, _, _ in EXTENDED_RULES if extended else _RULES:
        if any(key in lowered for key in keys):
            hits[mood] = sum(1 for p in patterns if p.search(text))
    return hits
