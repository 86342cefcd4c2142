"""Words a student reads, kept as keys until they are shown: an English template with named parameters, rendered in
the language of the student's edition.

``say("d{name} is all zeros", name="probs")`` is a ``Words``; ``str()`` of it is the English sentence,
``.render("ru")`` the Russian one, from ``autograder/locale/ru/grader.po``. ``python -m autograder.authoring`` extracts
every template written as ``say(...)`` or ``say_n(...)`` into ``autograder/locale/grader.pot``; a fast test fails
when a catalog lacks one, or changes its parameters.
"""

import functools
import gettext
import io
import string

from .editions import ENGLISH, LOCALE_DIR, edition

GRADER_DOMAIN = "grader"  # the catalog of the grader's words: diagnoses, verdicts, the feedback's summary


class Words:
    """A sentence template and its parameters. A parameter may itself be ``Words`` (a clause the sentence holds),
    rendered in the same language; numbers keep the template's format (``{error:.3g}``)."""

    __slots__ = ("template", "plural", "count", "params")

    def __init__(self, template: str, params: dict, plural: str | None = None, count: int | None = None):
        self.template, self.plural, self.count, self.params = template, plural, count, params

    def render(self, code: str = ENGLISH, domain: str = GRADER_DOMAIN) -> str:
        words = translations(code, domain)
        if self.plural is None:
            template = words.gettext(self.template)
        else:
            template = words.ngettext(self.template, self.plural, plural_count(self.count))
        values = {name: render(value, code, domain) for name, value in self.params.items()}
        if self.plural is not None:
            values["count"] = self.count
        decimal = edition(code).decimal
        return template.format(**values) if decimal == "." else _Numbers(decimal).vformat(template, (), values)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"say({self.template!r}, ...)"

    def _key(self):
        return self.template, self.plural, self.count, tuple(sorted((k, str(v)) for k, v in self.params.items()))

    def __eq__(self, other) -> bool:
        return isinstance(other, Words) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class _Numbers(string.Formatter):
    """``str.format`` with the edition's decimal separator in the numbers it formats (the words keep theirs)."""

    def __init__(self, decimal: str):
        self.decimal = decimal

    def format_field(self, value, format_spec):
        text = super().format_field(value, format_spec)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return text.replace(".", self.decimal) if number and self.decimal != "." else text


def say(template: str, **params) -> Words:
    """A sentence to translate: ``template`` is the English, with ``{name}`` for each parameter."""
    return Words(template, params)


def say_n(singular: str, plural: str, count: int, **params) -> Words:
    """A sentence whose form depends on a number, ``{count}`` in the template (Russian has three forms, Chinese one)."""
    return Words(singular, params, plural, count)


def plural_count(number) -> int:
    """The whole number a catalog's plural rule is given for ``number``: itself when whole; 2 for a fraction, whose form
    is a fraction's in the course's languages (English "1.5 points", Russian "1,5 балла", Chinese's only form),
    where a rule for whole numbers would pick Russian's "баллов" for 1.5 (and gettext warns of a float)."""
    return int(number) if float(number).is_integer() else 2


def render(value, code: str = ENGLISH, domain: str = GRADER_DOMAIN):
    """``value`` in the language of ``code`` when it is words (``Words``, or a ``Reason`` holding them); else as is."""
    if isinstance(value, Words):
        return value.render(code, domain)
    words = getattr(value, "words", None)
    if isinstance(words, Words):
        return words.render(code, domain)
    return value


def placeholders(template: str) -> set:
    """The parameter names a template uses (``{name}``, ``{error:.3g}`` -> name, error)."""
    return {field.split(".")[0].split("[")[0] for _, field, _, _ in string.Formatter().parse(template) if field}


@functools.cache
def translations(code: str, domain: str = GRADER_DOMAIN) -> gettext.NullTranslations:
    """The catalog ``autograder/locale/<code>/<domain>.po``, read as gettext reads a compiled one (fuzzy entries
    left out); English, or a missing catalog, gives the templates themselves."""
    path = LOCALE_DIR / edition(code).code / f"{domain}.po"
    if edition(code).code == ENGLISH or not path.exists():
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with path.open("rb") as po:
        catalog = read_po(po, locale=edition(code).locale)
    compiled = io.BytesIO()
    write_mo(compiled, catalog)
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)
