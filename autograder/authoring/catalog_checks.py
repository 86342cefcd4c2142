"""What a translation must keep of its English, checked message by message (the fast tier and translators use it).

A template of the grader or an f-string keeps every ``{field}``; a markdown block keeps its inline code, its link
targets, its formulas, its heading level and its table's shape; every message is translated (not empty, not fuzzy).
``python -m autograder.authoring.catalog_checks ru`` lists what is missing or broken in the Russian catalogs, and exits
with status 1 while there is any (0 when every catalog passes).
"""

import re
import sys
from collections import Counter

from babel.messages.pofile import read_po

from ..common.editions import LOCALE_DIR, TRANSLATED
from .catalogs import DOMAINS, read

FIELD = re.compile(r"\{[^{}]*\}")
CODE_SPAN = re.compile(r"`[^`\n]+`")
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
FORMULA = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.S)


def fields(text: str) -> Counter:
    return Counter(FIELD.findall(text.replace("{{", "").replace("}}", "")))


def _table_shape(text: str) -> list:
    return [line.strip().strip("|").count("|") for line in text.splitlines() if line.lstrip().startswith("|")]


def _heading(text: str) -> str:
    match = re.match(r"(#{1,6}) ", text)
    return match.group(1) if match else ""


def kept(english: str, translation: str, kind: str) -> list:
    """What ``translation`` lost of ``english``, in words (empty when it kept everything)."""
    lost = []
    if kind in ("words", "fstring") and fields(english) != fields(translation):
        lost.append(f"placeholders {sorted(fields(english))} became {sorted(fields(translation))}")
    if kind == "markdown":
        for name, pattern in (("inline code", CODE_SPAN), ("link targets", LINK_TARGET), ("formulas", FORMULA)):
            ours, theirs = Counter(pattern.findall(english)), Counter(pattern.findall(translation))
            if ours != theirs:
                lost.append(
                    f"{name}: missing {sorted((ours - theirs).elements())}, extra {sorted((theirs - ours).elements())}"
                )
        if _heading(english) != _heading(translation):
            lost.append(f"heading level {_heading(english) or 'none'} became {_heading(translation) or 'none'}")
        if _table_shape(english) != _table_shape(translation):
            lost.append(f"table rows and columns {_table_shape(english)} became {_table_shape(translation)}")
    return lost


def problems(code: str, domain: str) -> list:
    """(msgid, what is wrong) for every message of the domain's template that edition ``code`` lacks or breaks."""
    with (LOCALE_DIR / f"{domain}.pot").open("rb") as pot:
        template = read_po(pot)
    catalog = read(code, domain)
    found = []
    for message in template:
        if not message.id:
            continue
        kind = next((f for f in message.flags if f in ("markdown", "comment", "string", "fstring", "words")), "")
        ours = catalog.get(message.id)
        strings = (ours.string if isinstance(ours.string, tuple) else (ours.string,)) if ours else ("",)
        if ours is None or ours.fuzzy or not all(strings):
            found.append((message.id, "not translated" + (" (fuzzy: check it)" if ours and ours.fuzzy else "")))
            continue
        english = message.id if isinstance(message.id, tuple) else (message.id,)
        for translation in strings:
            found += [(message.id, lost) for lost in kept(english[0], translation, kind)]
    return found


def main() -> int:
    codes = sys.argv[1:] or list(TRANSLATED)
    any_found = False
    for code in codes:
        for domain in DOMAINS:
            found = problems(code, domain)
            any_found = any_found or bool(found)
            print(f"{code} {domain}: {len(found)} problems" + (f" in {_shown(code, domain)}" if found else ""))
            lines = {m.id: m.lineno for m in read(code, domain)} if found else {}
            for msgid, what in found[:40]:
                first = (msgid[0] if isinstance(msgid, tuple) else msgid).split("\n")[0]
                first = first if len(first) <= 90 else first[:89] + "…"
                # file:line, which an editor or a terminal opens at the message (a message the file lacks: none)
                where = f"{_shown(code, domain)}:{lines[msgid]}: " if lines.get(msgid) else ""
                print(f"  {where}{first!r}: {what}")
    if any_found:
        print(
            "Translate or mend them in those files (docs/translating.md), "
            "then run .venv/bin/python -m autograder.authoring."
        )
    return 1 if any_found else 0


def _shown(code: str, domain: str) -> str:
    path = LOCALE_DIR / code / f"{domain}.po"
    return str(path.relative_to(LOCALE_DIR.parents[1]))


if __name__ == "__main__":
    sys.exit(main())
