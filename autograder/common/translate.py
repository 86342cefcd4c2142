"""What a translator translates, and how a translation is put back in place (docs/design/editions.md).

Markdown (a notebook's markdown cell, a course page) is cut into blocks at blank lines, a fenced code block staying
whole. Code (a notebook's code cell, a ```python fence) gives its comments, a run of full-line comments as one
piece, and its string literals that hold words; code itself never changes. Each piece's English text is its msgid;
``translate_*`` put each piece's translation where the piece was, and leave what a catalog lacks in English.
"""

import ast
import io
import re
import tokenize
from dataclasses import dataclass

from .kept import kept_by_text

# Lines between these markers are code a student never reads as text (hidden tests, solutions, the engine's copy)
SKIPPED_REGIONS = [
    ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"),
    ("### BEGIN SOLUTION", "### END SOLUTION"),
    ("# ---- The autograder's own code", "# ---- end of the generated lines"),
]
BANNER = "# ---- "  # the engine copy's own banner lines are words for the student
NOT_WORDS = re.compile(r"\{[^{}]*\}|<[^<>]*>|`[^`]*`|https?://\S+")  # placeholders, tags, code, addresses
WORD = re.compile(r"[^\W\d_]{2,}")
NAMED_BY_A_COLON = re.compile(r"^[✔✘·]? ?\{[^{}]+\}: \{[^{}]+\}$")  # "✘ {name}: {problem}", a check's line
STANDALONE = {"YOUR CODE HERE"}  # nbgrader's stub for a solution: a comment of its own, never part of a run
PLAIN_QUOTES = str.maketrans({"'": "’", '"': "”"})
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*(\w*)")


@dataclass(frozen=True)
class Piece:
    """One translatable piece of a text: its English (the msgid) and where it is (characters start:end)."""

    text: str
    start: int
    end: int
    render: object  # translation -> the source that replaces text[start:end]
    kind: str  # markdown, comment, string or fstring: what a translation must keep (authoring.catalogs checks)


def holds_words(text: str) -> bool:
    """Whether a string literal is words for a reader, not a key, a name, a path or a format. A line that only says
    what a {placeholder} is about, before a colon (``f"✘ {name}: {problem}"``), is words too: Chinese writes that
    colon full-width."""
    bare = NOT_WORDS.sub(" ", text)
    if not WORD.search(bare):
        return bool(NAMED_BY_A_COLON.search(text))
    return " " in text.strip() or not text.isascii()


def _skipped_lines(source: str) -> set:
    """The line numbers (1-based) inside a skipped region, its markers included; the engine copy's banner lines
    stay words."""
    skipped, lines = set(), source.splitlines()
    for begin, end in SKIPPED_REGIONS:
        inside = False
        for number, line in enumerate(lines, 1):
            inside = inside or line.strip().startswith(begin)
            if inside and not line.lstrip().startswith(BANNER):
                skipped.add(number)
            if inside and line.strip().startswith(end):
                inside = False
    return skipped


def _offsets(source: str) -> list:
    """The character offset of each line's start (index 1 is line 1)."""
    offsets, total = [0, 0], 0
    for line in source.splitlines(keepends=True):
        total += len(line)
        offsets.append(total)
    return offsets


def _characters(line: str, utf8_offset: int) -> int:
    """ast counts columns in UTF-8 bytes; a str is indexed by characters."""
    return len(line.encode()[:utf8_offset].decode())


def _literal(text: str, quote: str, prefix: str) -> str:
    """A Python literal for ``text``: ``prefix`` f or nothing, ``quote`` the original's quote character(s)."""
    if len(quote) == 3:
        body = text.replace("\\", "\\\\").replace(quote[0] * 3, "\\" + quote[0] * 3)
        return prefix + quote + body + quote
    body = text.replace("\\", "\\\\").replace(quote, "\\" + quote).replace("\n", "\\n")
    return prefix + quote + body + quote


class _Source:
    """A source's text by an ast node's span (``ast.get_source_segment`` splits the whole source at every call)."""

    def __init__(self, source: str):
        self.text, self.lines, self.offsets = source, source.splitlines(keepends=True), _offsets(source)

    def span(self, node) -> tuple:
        if getattr(node, "end_lineno", None) is None:
            return None, None
        start = self.offsets[node.lineno] + _characters(self.lines[node.lineno - 1], node.col_offset)
        end = self.offsets[node.end_lineno] + _characters(self.lines[node.end_lineno - 1], node.end_col_offset)
        return start, end

    def segment(self, node) -> str | None:
        start, end = self.span(node)
        return None if start is None else self.text[start:end]


def _fstring_template(node: ast.JoinedStr, source: "_Source") -> str | None:
    """An f-string's text with each {expression} as written; None when a part cannot be read back."""
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(value.value.replace("{", "{{").replace("}", "}}"))
            continue
        expression = source.segment(value.value)
        if expression is None:
            return None
        conversion = "" if value.conversion == -1 else "!" + chr(value.conversion)
        spec = ""
        if value.format_spec is not None:
            inner = _fstring_template(value.format_spec, source)
            if inner is None:
                return None
            spec = ":" + inner
        parts.append("{" + expression + conversion + spec + "}")
    return "".join(parts)


def _quote_of(segment: str) -> tuple:
    """The prefix letter (f or '') and quote characters of a literal's source (its first part, if implicit
    concatenation joined several)."""
    match = re.match(r"([rRbBuUfF]*)('''|\"\"\"|'|\")", segment)
    prefixes, quote = match.group(1).lower(), match.group(2)
    return ("f" if "f" in prefixes else ""), quote


@kept_by_text(4_000_000)  # a cell repeated in every notebook is read once; a student's huge one is not kept
def code_pieces(source: str) -> tuple:
    """The translatable pieces of Python ``source``: comment runs and string literals that hold words."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # a NUL byte; an expression nested too deep
        return ()
    skipped, offsets, pieces, text_of = _skipped_lines(source), _offsets(source), [], _Source(source)
    nested = {id(n) for j in ast.walk(tree) if isinstance(j, ast.JoinedStr) for n in ast.walk(j) if n is not j}
    in_expressions = set()  # constants inside an f-string's {expression}: pieces of their own
    for j in ast.walk(tree):
        if isinstance(j, ast.FormattedValue):
            in_expressions |= {id(n) for n in ast.walk(j.value)}
    keys = _keys(tree)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Constant, ast.JoinedStr)) or node.lineno in skipped:
            continue
        if isinstance(node, ast.Constant) and node.value in keys:
            continue
        if isinstance(node, ast.Constant) and not isinstance(node.value, str):
            continue
        if id(node) in nested and id(node) not in in_expressions:
            continue
        segment = text_of.segment(node)
        if segment is None:
            continue
        prefix, quote = _quote_of(segment)
        if isinstance(node, ast.JoinedStr):
            text = _fstring_template(node, text_of)
            if text is None or not holds_words(text):  # its words around the {placeholders}
                continue
            prefix = "f"
        else:
            text = node.value
            if not holds_words(text):
                continue
            prefix = ""
        start, end = text_of.span(node)
        if id(node) in in_expressions:  # Python 3.11 allows no backslash in an f-string's expression
            render = lambda t, q=quote: q + t.translate(PLAIN_QUOTES).replace("\\", "/") + q
        else:
            render = lambda t, q=quote, p=prefix: _literal(t, q, p)
        pieces.append(Piece(text, start, end, render, "fstring" if prefix == "f" else "string"))
    pieces += _comment_pieces(source, skipped, offsets)
    return tuple(sorted(pieces, key=lambda p: p.start))


def _keys(tree) -> set:
    """The strings code looks things up by, never words wherever they stand in the cell (a translated copy would no
    longer find its twin): dict keys, subscripts, the operands of a comparison."""
    keys = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys += [k for k in node.keys if k is not None]
        elif isinstance(node, ast.Subscript):
            keys.append(node.slice)
        elif isinstance(node, ast.Compare):
            keys += [node.left, *node.comparators]
    return {k.value for k in keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def _comment_pieces(source: str, skipped: set, offsets: list) -> list:
    """Comments: a run of full-line comments at one indentation is one piece; an inline comment is one."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    lines, pieces, run = source.splitlines(), [], []
    for token in tokens:
        if token.type != tokenize.COMMENT or token.start[0] in skipped:
            continue
        row, col = token.start
        body = token.string[1:].removeprefix(" ")
        if token.string.startswith(("###", "#!")) or body.startswith(("noqa", "type:")) or not WORD.search(body):
            continue
        full_line = not lines[row - 1][:col].strip() and body not in STANDALONE
        if full_line and run and run[-1][0] == row - 1 and run[-1][1] == col:
            run.append((row, col, body))
            continue
        pieces += _run_piece(run, offsets, lines)
        run = [(row, col, body)] if full_line else []
        if not full_line:
            start = offsets[row] + col
            render = lambda t: "# " + t.replace("\n", " ")
            pieces.append(Piece(body, start, start + len(token.string), render, "comment"))
    return pieces + _run_piece(run, offsets, lines)


def _run_piece(run: list, offsets: list, lines: list) -> list:
    """A run of full-line comments (rows, column, text) as one piece, rendered as lines at the same indentation."""
    if not run:
        return []
    (first, col, _), (last, _, _) = run[0], run[-1]
    start, end = offsets[first] + col, offsets[last] + len(lines[last - 1])
    text = "\n".join(body for _, _, body in run)

    def render(translation: str, indent=" " * col) -> str:
        return ("\n" + indent).join("# " + line if line else "#" for line in translation.split("\n"))

    return [Piece(text, start, end, render, "comment")]


def markdown_pieces(text: str, code_language: str = "python") -> list:
    """The blocks of a markdown text between blank lines (a fenced block whole: only its comments and strings,
    when it is ``code_language``); an HTML comment or a block without words is no piece."""
    pieces, offset, block, block_start, fence, fence_lang = [], 0, [], 0, None, ""
    lines = text.splitlines(keepends=True)

    def close(end):
        body = "".join(block).rstrip("\n")
        if body.strip() and WORD.search(NOT_WORDS.sub(" ", body)) and not body.lstrip().startswith("<!--"):
            lead = len(body) - len(body.lstrip("\n"))
            pieces.append(Piece(body.strip("\n"), block_start + lead, block_start + len(body), str, "markdown"))

    for line in lines:
        match = FENCE.match(line)
        if fence is None and match:
            close(offset)
            block, fence, fence_lang = [], match.group(2), match.group(3).lower()
            code_start = offset + len(line)
        elif fence is not None:
            if line.strip().startswith(fence):
                if fence_lang in (code_language, "py"):
                    code = text[code_start:offset]
                    pieces += [
                        Piece(p.text, code_start + p.start, code_start + p.end, p.render, p.kind)
                        for p in code_pieces(code)
                    ]
                fence = None
                block, block_start = [], offset + len(line)
        elif not line.strip():
            close(offset)
            block, block_start = [], offset + len(line)
        else:
            if not block:
                block_start = offset
            block.append(line)
        offset += len(line)
    if fence is None:
        close(offset)
    return pieces


def put_back(text: str, pieces: list, translated) -> str:
    """``text`` with each piece replaced by its translation (``translated(msgid)`` -> str or None: kept as is)."""
    out, last = [], 0
    for piece in sorted(pieces, key=lambda p: p.start):
        if piece.start < last:  # inside a piece already replaced (a constant in an f-string's expression)
            continue
        new = translated(piece.text)
        out.append(text[last : piece.start])
        out.append(text[piece.start : piece.end] if new is None or new == piece.text else piece.render(new))
        last = piece.end
    out.append(text[last:])
    return "".join(out)


def translate_code(source: str, translated) -> str:
    return put_back(source, code_pieces(source), translated)


def translate_markdown(text: str, translated) -> str:
    return put_back(text, markdown_pieces(text), translated)
