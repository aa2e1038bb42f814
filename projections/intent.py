"""What a user's words do to the task, read from their shape alone (deterministic; standard library only).

Shared by capture (``ledger.capture.classify``: which event a prompt becomes) and the fold
(``projections.state``: what an intent does to the requirements and attempts already there), so both
read a prompt the same way and a re-fold of an old ledger applies the rules the capture applies now:

- ``withdrawal``: "never mind, we'll look at it later", "forget that": the latest requirement is
  no longer wanted ("withdrawn"), or is replaced by what follows ("replaced": "forget that, do X").
- ``question``: "what about edge cases?", "show me the JSON structure": asks for an answer, files
  nothing to do. Pushback ("but why do you think X?", "do we even need X?") is not one of these.
- ``says_failed``: "still doesn't work", "the redirect doesn't work": what the agent just changed did
  not do it.
- ``pasted_output``: a log, trace or command output pasted without a word of the user's own.
- ``prescribes``: "maybe we should use the https address?", "try a rewrite instead": a way to do the
  work, not work to do; when what followed it failed, it is no longer current.
- ``enquiry``: "explain what X does", "Is everything OK? Do the tests pass?": asks for an answer or a
  check, names no change; once answered and the user asks for work, it is no longer current.
- ``acknowledgement``: "Thanks, that works", "perfect, that fixed it": the user says what the agent did
  is fine; nothing to do.
- ``accepts``: "yes to all", "yes to both", "go ahead and implement it": the user takes up what the agent
  proposed; the proposal is the work, not these words.
- ``ci_run``: a CI job's log pasted as it is ("Run mkdocs build --strict … Error: Process completed with exit
  code 127."): what the user's CI said, run after run.
"""

from __future__ import annotations

import functools
import re
from typing import Literal

from ledger.base.lazyregex import lazy

_LEAD = r"^\W*(?:(?:oh|ok|okay|hmm+|well|ah+|sorry|so|but|and|hey|uh+|um+|actually|no|nah)\b[\s,.!:;-]*)*"
"""Interjections a prompt may open with; they carry no meaning of their own here."""

_WITHDRAW = lazy(
    _LEAD
    + r"""(?:never\s*mind|nevermind|nvm|forget\s+(?:about\s+)?(?:that|it|this|the\s+last\s+(?:one|request|part))|
        scratch\s+that|don'?t\s+bother|skip\s+(?:that|it|this)|leave\s+(?:that|it|this)(?:\s+for\s+(?:now|later))?|
        let'?s\s+(?:leave|park|drop|skip)\s+(?:that|it|this)|drop\s+(?:that|it|this))\b[\s,.!;:-]*""",
    re.IGNORECASE | re.VERBOSE,
)

_LATER = lazy(
    r"""^(?:(?:
        for\s+now|for\s+later|for\s+the\s+moment|then|please|thanks?|thank\s+you|i\s+guess|after\s+all|
        (?:we|i|you)(?:'ll|\s+will|\s+can|\s+could|\s+might|\s+may)\s+(?:look\s+at|come\s+back\s+to|revisit|do|
            handle|deal\s+with|get\s+(?:back\s+)?to|think\s+about)\s+(?:it|that|this)|
        later|another\s+time|some\s+other\s+time|next\s+time|tomorrow|separately|in\s+another\s+task|
        (?:not\s+)?now|
        (?:it'?s|that'?s|it\s+is|that\s+is)\s+(?:not\s+(?:needed|important|necessary|a\s+priority|urgent)|fine|ok|okay)|
        not\s+(?:important|needed|necessary|a\s+priority|urgent)|no\s+longer\s+needed|it\s+doesn'?t\s+matter
    )\b[\s,.!;:-]*)*$""",
    re.IGNORECASE | re.VERBOSE,
)
"""What may follow a withdrawal and still withdraw only ("..., we'll look at it later"): no new request."""


def withdrawal(text: str) -> Literal["withdrawn", "replaced"] | None:
    """Whether ``text`` withdraws the latest requirement, replaces it with what follows, or neither."""
    match = _WITHDRAW.match(text)
    if match is None:
        return None
    rest = text[match.end():].strip()
    return "withdrawn" if _LATER.match(rest) else "replaced"


_PUSHBACK = lazy(
    _LEAD + r"""(?:why\b|what(?:'s|\s+is|\s+are)?\s+(?:left|next|remaining|still)\b|
        do\s+we\s+(?:even\s+|really\s+)?need\b|does\s+(?:it|that|this)\s+(?:even\s+)?make\s+sense\b|
        are\s+you\s+sure\b|is\s+(?:it|that|this)\s+(?:really|even)\b|should(?:n'?t)?\s+(?:we|it|you)\b|
        would(?:n'?t)?\s+it\b|is\s*n'?t\s+(?:it|that|this)\b|could\s+we\b|can\s+we\b)""",
    re.IGNORECASE | re.VERBOSE,
)
"""Questions that push back or ask for work ("what is left to do in the parser?" names work to do): a
requirement or a correction, never a mere question."""

_DIAGNOSES = lazy(
    _LEAD + r"""why\s+(?:is|are|does|do|did|was|were|'?s)\s+(?!(?:you|we|i)\b)[^?\n]{0,80}?
        \b(?:fail\w*|broken|break(?:s|ing)?|crash\w*|error\w*|hang(?:s|ing)?|stuck|red|slow|
        tim(?:es|ed|ing)\s+out|not\s+(?:work|pass|build|run|start|load)\w*)\b|
    """ + _LEAD + r"""why\s+(?:(?:is|are|does|do|did|was|were|'?s)\s+)?(?:the|this|that|these|those|it)\b
        (?![^?\n]{0,80}?\b(?:you|we|i)\b)[^?\n]{0,80}?\bonly\s+(?:works?|runs?|builds?|supports?|compiles?|
        applies|exists?|happens?)\b""",
    re.IGNORECASE | re.VERBOSE,
)
"""A "why" that asks what causes a failure ("why is CI failing?", "why does the build break?") or a limit of the
code ("why this method does only work on unix and not windows?"), not the agent's reasoning ("why do you think
X?", "why do we only support X?"): asks for a diagnosis, which the answer gives."""


def _pushes_back(text: str) -> bool:
    return _PUSHBACK.match(text) is not None and _DIAGNOSES.match(text) is None

_ASKS = lazy(
    _LEAD + r"""(?:what\s+about|how\s+about\s+the|what\s+(?:is|are|was|were|does|do|did)\b|what'?s\b|
        how\s+(?:does|do|did|is|are|was|were)\b|where\s+(?:is|are|does|do)\b|which\s+\w+\s+(?:is|are|does|do)\b|
        who\s+(?:is|are|does|calls|uses)\b|
        (?:please\s+)?(?:show|tell)\s+me\b|(?:can|could)\s+you\s+(?:show|tell)\s+me\b)""",
    re.IGNORECASE | re.VERBOSE,
)
_ACTION = lazy(
    r"\b(?:add|fix|chang|updat|implement|creat|writ|remov|delet|renam|refactor|mak|use(?!r|ful|less)|using|run|"
    r"commit|push|"
    r"deploy|mov|replac|install|build|set|put|edit|migrat|convert|generat|stor|sav)\w{0,4}\b",
    re.IGNORECASE,
)
"""A verb of work, in any of its forms ("add", "adding", "made"): a question that names one asks for work. "user",
"useful" are no form of "use"."""
QUESTION_MAX = 200
"""Longer prompts carry more than a question (context, a request): left to the other rules."""


def question(text: str) -> bool:
    """Whether ``text`` only asks for an answer: one short question or request to be shown or told something
    ("what about edge cases?", "show me the JSON structure"), with no work named after it."""
    text = text.strip()
    if not text or len(text) > QUESTION_MAX or "\n" in text or _pushes_back(text):
        return False
    match = _ASKS.match(text)
    if match is None:
        return False
    # "what about adding X" or "show me and then fix it" names work: a request, not a question.
    return _ACTION.search(text[match.end():]) is None


_FAILED = lazy(
    _LEAD
    + r"""(?:(?:(?:it|that|this|the\s+[\w.@/-]+(?:\s+[\w.@/-]+)?)\s+)?(?:still\s+)?
            (?:does\s*n'?t|does\s+not|did\s*n'?t|did\s+not|is\s*n'?t|wo\s*n'?t|ca\s*n'?t)\s+(?:work|help|fix|load|build|
            change|solve)|
        still\s+(?:does\s*n'?t|does\s+not|is\s*n'?t|not|fails|failing|broken|the\s+same|no\s+(?:luck|change|good)|
            (?:the\s+)?same\s+(?:error|problem|issue|result))|
        (?:it|that|this)\s+(?:still\s+)?(?:fails|failed|breaks|broke)|
        (?:same|still\s+the\s+same)\s+(?:error|problem|issue|result)|no\s+luck|not\s+working|nothing\s+changed)\b""",
    re.IGNORECASE | re.VERBOSE,
)


def says_failed(text: str) -> bool:
    """Whether ``text`` opens by saying that what the agent did does not work ("still doesn't work")."""
    return _FAILED.match(text[:200]) is not None


_OUTPUT_LINE = lazy(
    r"""^\s*(?:
        \[?\d{1,4}[-/.:]\d{2}[-/.:]\d{2}|                      # a timestamp or date
        \[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|PANIC)\b[\]:]?|
        Traceback\s\(most\srecent|File\s"[^"]+",\sline\s\d+|at\s\S.*[:(]\d+|
        [\w.$]*(?:Error|Exception|Warning)\b(?::|\s*$)|
        (?:error|warning|fatal|note|hint)(?:\[\w+\])?:|-->\s|\^+\s*$|[|>]\s|
        (?:npm|yarn|pnpm)\s(?:ERR|WARN)|\$\s|>>>\s|
        [=_*~-]{3,}|
        \S+::\S+|\d+\s+(?:passed|failed|errors?|skipped)\b|(?:PASSED|FAILED|ERROR|ok|FAIL)\s|
        (?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+\S|HTTP/\d|https?://\S+\s*$|
        [{}\[\]()],?\s*$|"[^"]*"\s*:|
        [A-Z][A-Z0-9_]{3,}\s*$|
        \S+\.\w{1,5}:\d+
    )""",
    re.VERBOSE,
)
"""A line shaped like machine output: a log, a stack trace, a test runner's or a shell's output, JSON."""


def _output_line(line: str) -> bool:
    return _OUTPUT_LINE.match(line) is not None


OUTPUT_SHARE = 0.6


def pasted_output(text: str) -> bool:
    """Whether ``text`` is output pasted without the user's own words: at least two lines, its first and last
    lines and most of the rest shaped like a log, a trace or command output. A line of the user's own before
    or after ("still failing:", "fix this") makes it the user's prompt, classified by the other rules."""
    rows = [line for line in text.strip().splitlines() if line.strip()]
    if len(rows) < 2 or not (_output_line(rows[0]) and _output_line(rows[-1])):
        return False
    return sum(map(_output_line, rows)) >= OUTPUT_SHARE * len(rows)


_PRESCRIBES = lazy(
    _LEAD
    + r"""(?:(?:this\s+is\s+\w+|that'?s\s+\w+)[\s,.!]+)?(?:maybe\s+|perhaps\s+|i\s+think\s+)?
        (?:try(?:ing)?\b|let'?s\s+(?:try|use|go\s+with|switch|instead)\b|what\s+if\s+(?:we|you|i)\b|how\s+about\b|
        switch\s+to\b|go\s+with\b|(?:we|you)\s+(?:should|could|might|can|need\s+to)\s+(?:try|use|switch|instead|go)\b|
        (?:we|you)\s+(?:should|could|might)\s+(?:just\s+)?(?:use|try)\b)""",
    re.IGNORECASE | re.VERBOSE,
)
_INSTEAD = lazy(r"\binstead\b", re.IGNORECASE)


def prescribes(text: str) -> bool:
    """Whether ``text`` prescribes a way of doing the work rather than work to do ("maybe we should use the
    https repo address?", "try a rewrite instead", "let's go with Vite"): an approach, which a failure
    leaves behind."""
    head = text[:300]
    return _PRESCRIBES.match(head) is not None or _INSTEAD.search(head) is not None


_ENQUIRES = lazy(
    r"""\b(?:explain|describe|summari[sz]e|tell\s+me|show\s+me|walk\s+me\s+through|what|why|how|which|where|who|
        is\s+(?:there|it|this|that|everything)|are\s+(?:there|the|all)|do(?:es)?\s+(?:all|the|it|this|that|we)|
        did\s+(?:all|the|it|you)|can\s+(?:it|this|that)|
        (?:can|could)\s+you\s+(?:please\s+)?(?:check|verify|confirm|look)|check\s+(?:again|it|that|this|on|the\s+status|
            whether|if))\b|^\W*(?:please\s+)?(?:show|list|check)\b""",
    re.IGNORECASE | re.VERBOSE,
)
ENQUIRY_MAX = 400
"""Longer prompts carry context and requests the shape of a few words cannot rule out."""


def names_work(text: str) -> bool:
    """Whether ``text`` names a verb of work anywhere ("replace them with a link", "add a test")."""
    return _ACTION.search(text) is not None


@functools.lru_cache(maxsize=4096)
def enquiry(text: str) -> bool:
    """Whether ``text`` asks for an answer or a check and for no change: one short paragraph that asks
    (``question``, or an "explain", "what does", "is everything OK", "do all the tests pass" anywhere in
    it) and names no verb of work ("explain X and then fix it" asks for work). Pushback ("but why do
    you think X?") asks the agent to reconsider, which is not answered by an answer."""
    text = text.strip()
    if not text or len(text) > ENQUIRY_MAX or "\n\n" in text or _pushes_back(text):
        return False
    if question(text) or asks_question(text) or asks_way(text) or supposes(text):
        return True
    worded = _described(text) if "?" in text else text
    if worded != text:  # a question whose verbs of work may only say what is asked about ("where is X used?")
        asks = _ENQUIRES.search(text) or _TAGGED.search(text) or _YES_NO.match(text)
        return asks is not None and _ACTION.search(worded) is None
    return _ENQUIRES.search(text) is not None and _ACTION.search(text) is None


_DESCRIBED = lazy(
    r"""\b(?:(?:is|are|was|were|been|being|be|'s|'re)(?:\s+(?:not|still|already|now|really|even))*
            (?:\s+(?!(?:to|and|or|then)\b)[\w.@/-]+){0,2}?|
        (?:recall|remember|see|saw|seen|notice|noticed)(?:\s+(?:it|this|that|them|me|you|us|him|her))?)
        \s+(?=\w+(?:ed|en|ing)\b|(?:made|set|put|built|run|done|written)\b)(\w+)""",
    re.IGNORECASE | re.VERBOSE,
)
"""A verb that says what state a thing is in or what was seen happen, not work to do: a participle after a form
of "be" ("is settings.Telemetry used", "the test is running", "is the cli adding this") or after a verb of
seeing or remembering ("I don't recall adding it")."""

_TAGGED = lazy(r",\s*(?:right|correct|yes|no|is\s*n'?t\s+it|are\s*n'?t\s+(?:they|we)|does\s*n'?t\s+it)\s*\?\s*$",
               re.IGNORECASE)
"""A statement turned into a question by its tag ("my local config is changed, right?"): it asks to confirm."""


def _described(text: str) -> str:
    """``text`` without the verbs that describe a state or what was seen (``_DESCRIBED``)."""
    return _DESCRIBED.sub(lambda m: m.group(0)[: m.start(1) - m.start(0)], text)


_YES_NO = lazy(
    _LEAD + r"(?:do|does|did|is|are|was|were|am|can|could|will|would|has|have|had|should|shall|may|might)\b",
    re.IGNORECASE,
)


def yes_no_question(text: str) -> bool:
    """Whether ``text`` asks a yes/no question that names no work (``enquiry``): it opens with "do we", "is it",
    "can it" … and ends with "?", or a statement ends with a tag (", right?")."""
    text = text.strip()
    return (enquiry(text) and text.endswith("?")
            and (_YES_NO.match(text) is not None or _TAGGED.search(text) is not None))


_YES_OR_NO = lazy(
    r"""^\W*(?:short\s+answer\s*[:,]\s*)?(?:yes|yeah|yep|yup|no|nope|exactly|correct|indeed|not\s+really|
        not\s+quite)\b(?!\s+(?:problem|worries)\b)""",
    re.IGNORECASE | re.VERBOSE,
)


def answers_yes_no(reply: str) -> bool:
    """Whether the agent's ``reply`` opens with a yes or a no ("No, it's only the temp repo's config", "No merge
    conflicts — …", "Exactly."): the direct answer to a yes/no question ("no problem" is none)."""
    return _YES_OR_NO.match(reply) is not None


_ASKS_WAY = lazy(
    _LEAD + r"""(?:how\s+(?:can|could|should|would|might|do)\s+(?:we|i)\b|
        what(?:'s|\s+is|\s+would\s+be)\s+the\s+(?:best|simplest|easiest|cleanest|quickest|right|proper|
            most\s+\w+)\s+(?:way|approach)\b)[^?]*\?""",
    re.IGNORECASE | re.VERBOSE,
)


def asks_way(text: str) -> bool:
    """Whether ``text`` opens by asking how the work could be done ("How can we support Yash with the most minimal
    setup? …", "What's the most straightforward way to support this?"): it asks for an approach, so the verbs of
    work in it describe what is asked about; answered once the user asks for the work itself."""
    return _ASKS_WAY.match(text.strip()) is not None


_SUPPOSES = lazy(
    _LEAD + r"(?:maybe|perhaps|i\s+(?:think|guess|suspect|wonder\s+if)|could\s+it\s+be(?:\s+that)?|is\s+it\s+"
    r"(?:possible|because))\b[^?\n]*\?\s*$",
    re.IGNORECASE,
)


def supposes(text: str) -> bool:
    """Whether ``text`` is one short question that supposes a cause or a fact ("maybe the transparent keyword isn't
    allowed in the schema for palette?"): asks whether it is so, and names no way of doing the work ("maybe we
    should try X?" prescribes one) nor a verb of work."""
    text = text.strip()
    return (len(text) <= QUESTION_MAX and _SUPPOSES.match(text) is not None and not prescribes(text)
            and _ACTION.search(text) is None)


_THANKS = lazy(
    _LEAD
    + r"""(?:(?:thanks?|thank\s+you|thx|ty|great|perfect|nice|cool|awesome|excellent|brilliant|good|yes|yay|
        ok(?:ay)?|lovely|sweet)\b[\s,.!:;-]*)*
        (?:(?:that|it|this|everything)(?:'s|\s+is|\s+was)?\s+(?:now\s+)?(?:works?|worked|working|fixed(?:\s+it)?|
            did\s+(?:it|the\s+trick)|does\s+it|looks\s+(?:good|great|right|fine)|(?:all\s+)?good|fine|right|done)
         |(?:works?|worked|fixed|solved)(?:\s+(?:now|fine|perfectly|great))?|(?:looks\s+)?good|lgtm|all\s+good)
        (?:\s+(?:now|fine|perfectly|great|again|for\s+me))?[\s,.!:;)(-]*(?:thanks?|thank\s+you|!|:\)|\s)*$""",
    re.IGNORECASE | re.VERBOSE,
)


def acknowledgement(text: str) -> bool:
    """Whether ``text`` only tells the agent that what it did is fine ("Thanks, that works", "perfect, that
    fixed it!", "great, works now", "it worked!"): nothing new to do. A request after it ("thanks, now add X")
    is one."""
    return len(text) <= 120 and _THANKS.match(text.strip()) is not None


_WORKS = lazy(
    r"""\b(?:it|that|this|things|everything|all|the\s+[\w.@/-]+)\s+(?:(?:is|are|was|were)\s+)?(?:now\s+)?(?:all\s+)?
        (?:works?|worked|working)\b""",
    re.IGNORECASE | re.VERBOSE,
)
_FIRST_SENTENCE = lazy(r"^[^\n]*?(?:[.!?](?=\s|$)|\n|$)")


def says_works(text: str) -> bool:
    """Whether ``text``'s first sentence says that it works now ("it worked!", "other than the encryption, things
    are working smoothly"): not a question ("did it work?"), not opening on a failure ("still doesn't work")."""
    match = _FIRST_SENTENCE.match(text.strip())
    sentence = match.group(0) if match else ""
    return (not sentence.rstrip().endswith("?") and _WORKS.search(sentence) is not None
            and not says_failed(text))


_SHELL_PROMPT = lazy(r"^\s*(?:\([\w.-]+\)\s+)?[\w.-]+@[\w.-]+(?::\S*)?(?:\s+[^\s$%#]+)?\s*[$%#]\s+\S", re.MULTILINE)
"""A shell's prompt and the command typed after it (``jim@host:~/x$ make``, ``me@mac proj % npm test``): a terminal
session pasted into the prompt."""


def reports_problem(text: str) -> bool:
    """Whether ``text`` reports that something does not work: it says so first ("still no", "still doesn't
    work"), or it carries what the user saw (a pasted terminal session, a log or a trace, a CI job's log)."""
    return says_failed(text) or pasted_output(text) or _SHELL_PROMPT.search(text) is not None or ci_run(text)


_GETS_ERROR = lazy(
    r"""\b(?:getting|get|got|seeing|see|hitting|hit|receiving)\b(?:[^.\n]|\.(?!\s)){0,40}?
        \b(?:errors?|exceptions?|failures?|forbidden|denied|traceback|panic|\d{3}\s+[A-Z][a-z]+|
            cannot|can'?t|could\s*n'?t|could\s+not|unable\s+to|no\s+such\s+file|not\s+found)\b""",
    re.IGNORECASE | re.VERBOSE,
)


def reports_error(text: str) -> bool:
    """Whether ``text`` reports what went wrong when the user ran something: ``reports_problem``, or it says
    what they got at its start ("when I run X I am getting this error: …", "now I get 403 Forbidden: …", "I get .:
    cannot open file …")."""
    return reports_problem(text) or _GETS_ERROR.search(text[:300]) is not None


_NAMED = lazy(r"[\w@.:/-]*[a-z][\w@-]*[.:/][\w@.:/-]*[a-z0-9]", re.IGNORECASE)
"""A word that names a command, script, file or package (``release:manual``, ``ci.yml``, ``@scope/pkg``)."""


def names(text: str) -> set[str]:
    """The names of commands, scripts, files and packages in ``text``, lower-cased; addresses left out."""
    return {w.lower() for w in _NAMED.findall(text) if "://" not in w and not w.lower().startswith(("http", "www."))}


_NOT_NEEDED = lazy(
    r"""\b(?:i|we)\s+(?:do\s*n'?t|do\s+not|no\s+longer|dont)\s+(?:really\s+|even\s+|actually\s+)?need\s+
        (?:(?:the|a|an|any|that|this|those|these|my|our)\s+)?([a-z][\w.-]{2,})""",
    re.IGNORECASE | re.VERBOSE,
)
""""i dont need the token", "we don't need tests anymore": the thing the user says they need no more."""


@functools.lru_cache(maxsize=4096)
def not_needed(text: str) -> str | None:
    """What ``text``'s first sentence says the user no longer needs ("ahh ok looks like i dont need the token to
    set the jwks endpoint": "token"), lower-cased; None when it says no such thing. Memoised: the fold asks of
    every user statement (a pure function of the text)."""
    match = _NOT_NEEDED.search(text[:200])
    return match.group(1).lower().rstrip(".") if match else None


_CALLS_OFF = lazy(
    r"""\b(?:why\s+(?:do|would)\s+(?:you|we)\s+(?:even\s+|really\s+)?need\s+(?:to\s+(?:use|run|start)\s+)?|
        (?:you|we)\s+(?:do\s*n'?t|do\s+not|dont)\s+(?:even\s+|really\s+)?need\s+(?:to\s+(?:use|run|start)\s+)?|
        no\s+need\s+(?:for|to\s+(?:use|run|start))\s+|
        (?:do\s*n'?t|do\s+not|dont)\s+(?:use|run|start|bother\s+with)\s+|
        (?:forget|skip|stop)\s+(?:about\s+)?(?:using\s+|running\s+|trying\s+)?)
        (?:(?:the|a|an|any|that|this|those|these)\s+)?([a-z][\w.-]{2,})""",
    re.IGNORECASE | re.VERBOSE,
)


@functools.lru_cache(maxsize=4096)
def calls_off(text: str) -> frozenset[str]:
    """The things ``text`` calls off: what the user says is not needed or not to be used ("why do you need docker
    for the api logs?", "forget the tests", "skip the e2e run"), lower-cased and without a plural's "s"; a
    failure of one of them is called off, not failing now."""
    found = {m.group(1).lower().rstrip(".") for m in _CALLS_OFF.finditer(text[:400])}
    needed = not_needed(text)
    if needed is not None:
        found.add(needed)
    return frozenset(singular(w) for w in found if w not in _NOT_A_THING)


_NOT_A_THING = frozenset({"that", "this", "those", "these", "them", "there", "here", "it", "for", "now", "and",
                          "the", "you", "doing", "anything", "everything"})


def singular(word: str) -> str:
    """``word`` without a plural's "s" ("tests" -> "test"), so a name and its plural match."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


_EXPLICIT_QUESTION = lazy(
    _LEAD + r"""(?:i\s+(?:have|had|got)\s+(?:a|one)\s+(?:quick\s+|small\s+|short\s+)?question|
        (?:a\s+)?(?:quick|small|short)\s+question|question\s*:)""",
    re.IGNORECASE | re.VERBOSE,
)
_CONFIRMS = lazy(
    r"\b(?:am\s+i\s+(?:right|correct|understanding|interpret\w*|reading|getting)|is\s+(?:that|this)\s+"
    r"(?:right|correct)|do\s+i\s+understand)\b[^?]{0,60}\?\s*$",
    re.IGNORECASE,
)


def asks_question(text: str) -> bool:
    """Whether ``text`` says it is a question ("I had a quick question about X - ...?") or asks the agent to
    confirm the user's understanding ("... am I interpreting this correctly?"): the verbs of work in it
    describe the design asked about, not work to do."""
    text = text.strip()
    return (len(text) <= ENQUIRY_MAX and "\n\n" not in text and text.endswith("?")
            and (_EXPLICIT_QUESTION.match(text) is not None or _CONFIRMS.search(text) is not None))


_REDO = lazy(
    r"""\b(?:pull\s+(?:in\s+)?(?:the\s+)?(?:latest|changes|main|master|again)|git\s+pull|
        (?:try|run|do)\s+(?:it|that|this)\s+again|retry\s+(?:it|that|this)|re-?run\s+(?:it|that|this|the))\b""",
    re.IGNORECASE | re.VERBOSE,
)


def asks_redo(text: str) -> bool:
    """Whether ``text`` asks the agent to fetch the latest or do something again ("pull in the latest and try
    that again please"): work to do, though it names no verb of ``_ACTION``."""
    return _REDO.search(text) is not None


_BRANCH_MOVE = lazy(
    _LEAD + r"""(?:(?:let'?s|lets|please|can\s+you|could\s+you|now)\s+)*
        (?:(?:get|go|switch|move|head|come)\s+back\s+(?:to|on)|switch\s+(?:over\s+)?to|check\s*out|change\s+to|
            move\s+to)\s+(?:the\s+)?(?:branch\s+)?([\w./-]*[\w-])(?:\s+branch)?[\s,.!]*(?:please)?[\s.!]*$""",
    re.IGNORECASE | re.VERBOSE,
)


@functools.lru_cache(maxsize=4096)
def branch_move(text: str) -> str | None:
    """The branch a short request asks to move to ("ok lets get back to main", "switch to feat/x", "checkout
    develop"), or None: such a request is done once the agent's ``git checkout``/``git switch`` to it passed."""
    text = text.strip()
    if len(text) > 120 or "\n" in text:
        return None
    match = _BRANCH_MOVE.match(text)
    return match.group(1) if match else None


_DECLINES = lazy(
    r"""^\W*(?:short\s+answer\s*:\s*|in\s+short\s*[:,]\s*)?(?:no\b|nope\b|not\s+really\b|unfortunately\b|sadly\b|
        (?:we|you|i)\s+(?:can\s*n'?t|can\s*not|cannot)\b|(?:we|it)\s+already\s+(?:do|does)\b|
        (?:that|it|this)\s+(?:wo\s*n'?t|would\s*n'?t|ca\s*n'?t|can\s*not|cannot)\s+(?:work|help)\b|
        (?:that|it|this)(?:'d|'s|\s+would|\s+will|\s+is)\s+(?:be\s+)?(?:risky|dangerous|unsafe|a\s+bad\s+idea|
            not\s+(?:a\s+good\s+idea|safe|worth\s+it))\b)""",
    re.IGNORECASE | re.VERBOSE,
)


def declines(reply: str) -> bool:
    """Whether the agent's ``reply`` opens by answering no ("No — and the reason is ordering", "Short answer: we
    already do", "That would be risky."): what the question proposed is not to be done."""
    return _DECLINES.match(reply) is not None


_AGREES = lazy(
    r"""^\W*(?:okay|ok|alright|all\s+right|fair\s+enough|makes\s+sense|got\s+it|understood|i\s+see|agreed|
        i\s+agree)\b|\bi\s+(?:fully\s+|totally\s+)?agree\b""",
    re.IGNORECASE | re.VERBOSE,
)


def agrees(text: str) -> bool:
    """Whether the user's ``text`` opens by accepting the agent's answer ("Okay, …", "fair enough", "I agree with
    the observations"), and does not say that something failed."""
    return _AGREES.search(text[:200]) is not None and not says_failed(text)


_DROPS = lazy(
    _LEAD + r"""(?:please\s+)?(?:do\s*n'?t|do\s+not|dont|no\s+need\s+to)\s+(?:\w+\s+)?
        (create|open|make|add|write|file|submit|raise|send|push|deploy|publish|release)\w*\s+
        (?:(?:a|an|the|any|that|this)\s+)?([a-z][\w.-]+)""",
    re.IGNORECASE | re.VERBOSE,
)


@functools.lru_cache(maxsize=4096)
def drops(text: str) -> tuple[str, str] | None:
    """``(verb, thing)`` when ``text`` opens by telling the agent not to make something ("don't create a pr, just a
    commit", "do not open the PR"): lower-cased, the thing singular; None otherwise. The request that asked for it
    is narrowed: that part of it is replaced."""
    match = _DROPS.match(text.strip()[:200])
    return (match.group(1).lower(), singular(match.group(2).lower().rstrip(".,"))) if match else None


_CHECKS = (
    ("lint", lazy(r"\b(?:golangci-lint|staticcheck|eslint|ruff|flake8|pylint|clippy|rubocop|shellcheck|biome|"
                  r"\w*lint(?:er|ing)?)\b", re.IGNORECASE)),
    ("format", lazy(r"\b(?:gofmt|goimports|prettier|rustfmt|\w*fmt|formatting|reformat\w*)\b", re.IGNORECASE)),
    ("test", lazy(r"(?:^|\s)---\s+FAIL\b|\bFAIL:|\b(?:pytest|jest|vitest|go\s+test|tests?\s+failed)\b", re.IGNORECASE)),
    ("build", lazy(r"\b(?:build\s+failed|compilation\s+failed|error\s+TS\d+|tsc)\b", re.IGNORECASE)),
)
"""A failed check's kind, by the tools and words its output names: a linter, a formatter, a test runner, a build."""

_CHECK_FAILED = lazy(
    r"""\b(?:errors?|fail(?:s|ed|ure|ures|ing)?|FAIL|issues?|problems?|need\w*\s+(?:\w+\s+)?formatting|
        would\s+(?:be\s+)?reformat\w*|not\s+(?:properly\s+)?formatted)\b""",
    re.IGNORECASE | re.VERBOSE,
)
_REPORT_LEAD = lazy(
    _LEAD + r"(?:(?:please\s+)?fix\b|(?:i'?m|i\s+am|we'?re|we\s+are)\s+(?:getting|seeing)\b|"
    r"(?:i|we)\s+(?:get|got|see)\b|ci\b|gh\s+actions?\b|github\s+actions?\b)",
    re.IGNORECASE,
)
_REQUEST_LINE = lazy(
    _LEAD + r"""(?:please\s+|also\s+|then\s+|now\s+)*(?:
        (?:add|change|update|implement|create|write|remove|delete|rename|refactor|make|use|commit|push|deploy|move|
            replace|install|set|put|edit|migrate|convert|generate|ensure|check|look|investigate|try|open|document)\b|
        (?:can|could|would|will)\s+you\b|let'?s\b|(?:we|you)\s+(?:should|need\s+to|must)\b|
        i\s+(?:want|need|would\s+like)\b)""",
    re.IGNORECASE | re.VERBOSE,
)
"""A line that asks for work: an imperative, a "can you", a "let's". Pasted output opens with none of these
("Writing patch to …", "Running [golangci-lint …]" are a tool's words, not the user's)."""


@functools.lru_cache(maxsize=4096)
def reported_check(text: str) -> frozenset[str]:
    """The kinds of check (``lint``, ``format``, ``test``, ``build``) whose failed output the user pasted as the
    whole of ``text`` ("I'm getting this error on GH Actions:" then golangci-lint's report; "fix :" then "The
    following files need gofmt formatting: …"): a lead line of the user's that introduces it (ends with ":", or
    asks to fix, or says what they get) and output naming the check and its failure, with no line after the
    lead that asks for other work. Empty when ``text`` is anything else: a message that also asks for work is a
    requirement a passing check does not answer. Memoised: asked of each current requirement at each passing
    check."""
    rows = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if len(rows) < 2 or len(rows[0]) > 120:
        return frozenset()
    lead, body = rows[0], "\n".join(rows[1:])
    if not (lead.endswith(":") or _REPORT_LEAD.match(lead)):
        return frozenset()
    if any(_REQUEST_LINE.match(row) for row in rows[1:]) or _CHECK_FAILED.search(body) is None:
        return frozenset()
    return frozenset(kind for kind, pattern in _CHECKS if pattern.search(body))


_ALREADY = lazy(
    r"""\b(?:already\s+(?:\w+\s+){0,2}?(?:in\s+place|added|there|exists?|present|done|implemented|handled|covered|
            fixed|applied|included|includes?|has|have|uses?|wrapped|configured|addressed)\b|
        nothing\s+(?:else|more|left)\s+to\s+(?:do|change|add)|no\s+(?:further\s+|more\s+)?changes?\s+(?:are\s+|is\s+)?
            (?:needed|required|necessary))""",
    re.IGNORECASE | re.VERBOSE,
)


def says_already_done(reply: str) -> bool:
    """Whether the agent's ``reply`` opens (the first two sentences of its first paragraph) by saying what was
    asked is done already ("The timeout is already in place for both functions", "Those tests were already added
    in the previous step") or that nothing is left to do ("All 7 pass. Nothing else to do here.")."""
    paragraph = reply.strip().split("\n\n", 1)[0]  # a heading or a list after it is the reply's body, not its answer
    head = " ".join(re.split(r"(?<=[.!?])\s+", paragraph, maxsplit=2)[:2])
    return _ALREADY.search(head[:400]) is not None


_SELECTION = lazy(
    r"""\b(?:do|implement\w*|start\s+(?:with\s+)?(?:implementing\s+)?|apply|tackle|work\s+on|go\s+with|fix|add|
        address)\s+(?:(?:the\s+)?(?:suggestions?|items?|points?|steps?|options?|ideas?|changes?|numbers?|
        issues?|comments?)\s+)?\#?(\d{1,2}(?:\s*(?:-|\u2013|to)\s*\#?\d{1,2}|(?:\s*(?:,|and|&|,\s*and)\s*\#?\d{1,2})+))\b""",
    re.IGNORECASE | re.VERBOSE,
)


@functools.lru_cache(maxsize=4096)
def selects(text: str) -> frozenset[int]:
    """The numbered items a short request picks from a list the agent gave ("let's start with implementing
    suggestions 1-4 first" -> 1, 2, 3, 4; "okay now let's do 6,7,8,10"): two or more, as a range or a list.
    Empty for anything else (a single number may be a step or a line)."""
    if len(text) > 200 or "\n" in text.strip():
        return frozenset()
    match = _SELECTION.search(text)
    if match is None:
        return frozenset()
    spec = match.group(1)
    ranged = re.fullmatch(r"(\d+)\s*(?:-|\u2013|to)\s*#?(\d+)", spec)
    if ranged is not None:
        low, high = int(ranged.group(1)), int(ranged.group(2))
        return frozenset(range(low, high + 1)) if low < high <= low + 20 else frozenset()
    return frozenset(int(n) for n in re.findall(r"\d+", spec))


_REMOVES = lazy(r"\b(?:remove|delete|rm|drop|get\s+rid\s+of|clean\s+up)\b", re.IGNORECASE)
_FILE_NAME = lazy(r"[^.]\.[A-Za-z0-9]{1,6}$")


def asks_removal(text: str, name: str) -> bool:
    """Whether the request ``text`` asks to remove the file ``name`` (a base name with an extension): a verb of
    removing, and the name within 120 characters after it ("Remove the docs/task-honor-ignore-lists.md file as the
    work is done"). A folder's name ("tests") is a common word: "delete the Python files … run Rust tests" names
    no such file."""
    if _FILE_NAME.search(name) is None:
        return False
    lowered = text.lower()
    for match in _REMOVES.finditer(text[:400]):
        window = lowered[match.end():match.end() + 120]
        if re.search(r"(?:^|[\s/`'\"(])" + re.escape(name.lower()) + r"(?:$|[\s`'\",.:;)!?])", window):
            return True
    return False


_PUBLISH_WORDS = frozenset({
    "commit", "committed", "commits", "push", "pushed", "pushes", "did", "you", "have", "has", "can", "could",
    "would", "will", "please", "pls", "now", "then", "and", "also", "the", "code", "changes", "change", "work",
    "it", "this", "that", "them", "these", "all", "everything", "to", "main", "master", "origin", "remote",
    "github", "branch", "yet", "already", "ok", "okay", "lets", "let's", "go", "ahead", "do", "a", "an",
})
"""The words a request to commit or push is made of ("Did you commit and pushed the code?", "ok, commit and push
it"): any other word asks for more than that."""
_PUBLISH_NEGATED = lazy(r"\b(?:not|don'?t|do\s+not|never|no|without|let\s+me|i'?ll)\b", re.IGNORECASE)


def asks_publish(text: str) -> frozenset[str]:
    """What a short request asks to have done with the work in git and nothing else: ``commit``, ``push`` or
    both ("Did you commit and pushed the code?", "commit and push"). Empty when it asks for anything more, or
    not to ("let me commit", "don't push yet")."""
    text = text.strip()
    if len(text) > 80 or "\n" in text or _PUBLISH_NEGATED.search(text):
        return frozenset()
    words = re.findall(r"[a-z']+", text.lower())
    if not words or any(w not in _PUBLISH_WORDS for w in words):
        return frozenset()
    return frozenset(kind for kind in ("commit", "push") if any(w.startswith(kind) for w in words))


_TAKEN = r"(?:it|that|this|them|these|those|both|all|everything|all\s+of\s+(?:them|these|those|it)|the\s+above)"
_ACCEPTS = lazy(
    r"""^\W*(?:(?:ok(?:ay)?|alright|great|perfect|cool|nice|good|sounds\s+good)\b[\s,.!]*)?
    (?:(?:yes|yeah|yep|yup|sure|absolutely|definitely)\b
            (?:[\s,.!]*(?:please|to\s+(?:all|both|everything|each|all\s+of\s+(?:them|these|those)|them\s+all|
                the\s+above)|do\s+""" + _TAKEN + r"""|go\s+ahead|proceed|all|both|thanks?|thank\s+you)\b)*|
        (?:let'?s|lets)\s+(?:go|do\s+""" + _TAKEN + r""")\b|
        go\s+(?:ahead|for\s+it)\b
            (?:\s+(?:and|with)\s+(?:(?:do|implement|apply|make|build|add)\s+)?""" + _TAKEN + r"""\b)?|
        (?:please\s+)?(?:do|implement|apply)\s+""" + _TAKEN + r"""\b|
        (?:to\s+)?(?:both|all)\b|sounds\s+good\b|
        proceed\b(?:\s+with\s+""" + _TAKEN + r"""\b)?)
    [\s,.!]*(?:(?:please|thanks?|thank\s+you)[\s,.!]*)?$""",
    re.IGNORECASE | re.VERBOSE,
)


def accepts(text: str) -> bool:
    """Whether ``text`` only takes up what the agent proposed ("yes to all", "yes to both", "yes please", "lets go",
    "go ahead and implement it"): no words of its own. "yes, then commit, push" or "yes please fix them" say
    something of their own: a request."""
    text = text.strip()
    return len(text) <= 80 and "\n" not in text and _ACCEPTS.match(text) is not None


_CI_STEP = lazy(r"^Run\s+\S")
_CI_DURATION = lazy(r"^\d+(?:m\s*\d+)?s$")
_CI_EXIT = lazy(r"^(?:##\[error\])?Error:\s+Process completed with exit code \d+\.?$", re.MULTILINE)
_FIX_LINE = lazy(_LEAD + r"(?:please\s+)?(?:fix|solve|resolve|help)\b", re.IGNORECASE)


def ci_run(text: str) -> bool:
    """Whether ``text`` is a CI job's log as GitHub Actions shows it, pasted whole: a step's header ("Run mkdocs
    build --strict") first (after the step's time, "1s"), the runner's own "Error: Process completed with exit code
    N." in it, and no line after the last of those that asks for work."""
    rows = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if rows and _CI_DURATION.match(rows[0]):
        rows = rows[1:]
    if len(rows) < 2 or not _CI_STEP.match(rows[0]):
        return False
    ends = [i for i, row in enumerate(rows) if _CI_EXIT.match(row)]
    # The user's own words come after the log (the lines inside it are the job's: code, tracebacks).
    return bool(ends) and not any(_REQUEST_LINE.match(row) or _FIX_LINE.match(row) for row in rows[ends[-1] + 1:])
