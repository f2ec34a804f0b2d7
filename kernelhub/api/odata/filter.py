"""`$filter`: a small tokenizer and recursive-descent parser that yields a Django `Q`.

Grammar (the subset Power BI folds into queries, and what the docs promise)::

    expr       := and_expr ("or" and_expr)*
    and_expr   := unary ("and" unary)*
    unary      := "not" unary | primary
    primary    := "(" expr ")" | function | comparison
    function   := ("contains" | "startswith" | "endswith") "(" operand "," string ")"
    comparison := operand op literal | literal op operand
    operand    := field | ("tolower" | "toupper") "(" field ")"
    op         := eq | ne | gt | ge | lt | le
    literal    := string | number | true | false | null | datetime

Only whitelisted columns (the entity set's) may appear; types are checked, so a string
compared with a number is refused with a message instead of failing inside the database.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from typing import Any

from django.db.models import F, Q
from django.db.models import lookups
from django.db.models.functions import Lower, Upper

from kernelhub.api.flat import BOOL, DATE, FLOAT, INT, STR, EntitySet

MAX_FILTER_LENGTH = 4000
MAX_DEPTH = 50
COMPARISONS = {"eq": "exact", "ne": "exact", "gt": "gt", "ge": "gte", "lt": "lt", "le": "lte"}
FUNCTIONS = {"contains": "contains", "startswith": "startswith", "endswith": "endswith"}
CASE_FUNCTIONS = {"tolower": Lower, "toupper": Upper}
LOOKUPS = {"exact": lookups.Exact, "gt": lookups.GreaterThan, "gte": lookups.GreaterThanOrEqual,
           "lt": lookups.LessThan, "lte": lookups.LessThanOrEqual, "contains": lookups.Contains,
           "startswith": lookups.StartsWith, "endswith": lookups.EndsWith}
SUPPORTED_FUNCTIONS = "contains, startswith, endswith, tolower, toupper"
ORDERED_TYPES = {INT, FLOAT, STR, DATE}
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
# $top/$skip: beyond this no table has rows, and offsets stay far inside a 64-bit integer.
MAX_PAGING_INT = 2 ** 53 - 1
_DIGITS_RE = re.compile(r"[0-9]+")


class ODataQueryError(ValueError):
    """A query option the feed refuses; its message goes back in the 400 response."""


@dataclass(frozen=True)
class Ref:
    """A property in an expression, maybe wrapped in tolower()/toupper()."""

    column: Any
    case: Any = None  # Lower or Upper

    def q(self, lookup: str, value: Any) -> Q:
        if self.case is None:
            return Q(**{f"{self.column.alias}__{lookup}": value})
        return Q(LOOKUPS[lookup](self.case(F(self.column.alias)), value))


@dataclass(frozen=True)
class Token:
    kind: str  # "string", "number", "datetime", "name", "(", ")", ","
    value: Any
    pos: int


_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<datetime>\d{4}-\d{2}-\d{2}
        (?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?)(?![\w.])
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?P<suffix>[dDfFmMlL])?(?![\w.])
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:/[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<punct>[(),])
""", re.VERBOSE)


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN_RE.match(text, pos)
        if match is None:
            if text[pos] == "'":
                raise ODataQueryError(f"$filter: unterminated string starting at position {pos}.")
            raise ODataQueryError(f"$filter: unexpected character {text[pos]!r} at position {pos}.")
        if match.group("string") is not None:
            tokens.append(Token("string", match.group("string")[1:-1].replace("''", "'"), pos))
        elif match.group("datetime") is not None:
            tokens.append(Token("datetime", _parse_datetime(match.group("datetime"), pos), pos))
        elif match.group("number") is not None:
            raw = match.group("number")
            number = float(raw) if any(c in raw for c in ".eE") else int(raw)
            tokens.append(Token("number", number, pos))
        elif match.group("name") is not None:
            tokens.append(Token("name", match.group("name"), pos))
        elif match.group("punct") is not None:
            tokens.append(Token(match.group("punct"), match.group("punct"), pos))
        pos = match.end()
    return tokens


def _parse_datetime(raw: str, pos: int) -> dt.datetime:
    try:
        value = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ODataQueryError(f"$filter: {raw!r} at position {pos} is not a valid date/time.")
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    try:
        value = value.astimezone(dt.timezone.utc)  # in UTC it must still be a valid date
    except OverflowError:
        raise ODataQueryError(f"$filter: {raw!r} at position {pos} is out of the range of "
                              "dates (years 1 to 9999 in UTC).")
    return value


class _Parser:
    def __init__(self, text: str, entity: EntitySet):
        self.tokens = tokenize(text)
        self.index = 0
        self.entity = entity
        self.depth = 0
        self.used: set[str] = set()  # the columns the expression reads

    # -- token helpers -------------------------------------------------------------------
    def peek(self) -> Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> Token:
        token = self.peek()
        if token is None:
            raise ODataQueryError("$filter: the expression ends too early.")
        self.index += 1
        return token

    def expect(self, kind: str) -> Token:
        if self.peek() is None:
            raise ODataQueryError(f"$filter: expected {kind!r}, but the expression ends too early.")
        token = self.take()
        if token.kind != kind:
            raise ODataQueryError(
                f"$filter: expected {kind!r} at position {token.pos}, found {_show(token)}.")
        return token

    def at_keyword(self, word: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "name" and token.value == word

    # -- grammar ---------------------------------------------------------------------------
    def parse(self) -> Q:
        if not self.tokens:
            raise ODataQueryError("$filter is empty.")
        q = self.expr()
        token = self.peek()
        if token is not None:
            raise ODataQueryError(f"$filter: unexpected {_show(token)} at position {token.pos}.")
        return q

    def expr(self) -> Q:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ODataQueryError("$filter: the expression is nested too deeply.")
        q = self.and_expr()
        while self.at_keyword("or"):
            self.take()
            q = q | self.and_expr()
        self.depth -= 1
        return q

    def and_expr(self) -> Q:
        q = self.unary()
        while self.at_keyword("and"):
            self.take()
            q = q & self.unary()
        return q

    def unary(self) -> Q:
        if self.at_keyword("not"):
            self.take()
            return ~self.unary()
        return self.primary()

    def primary(self) -> Q:
        token = self.peek()
        if token is None:
            raise ODataQueryError("$filter: the expression ends too early.")
        if token.kind == "(":
            self.take()
            q = self.expr()
            self.expect(")")
            return q
        if token.kind == "name" and token.value in FUNCTIONS:
            return self.function()
        if token.kind == "name" and token.value in ("and", "or"):
            raise ODataQueryError(f"$filter: '{token.value}' at position {token.pos} needs an "
                                  "expression on its left.")
        return self.comparison()

    def function(self) -> Q:
        name = self.take()
        self.expect("(")
        ref = self.operand()
        self.expect(",")
        literal = self.take()
        self.expect(")")
        if not isinstance(ref, Ref):
            raise ODataQueryError(f"$filter: {name.value}() needs a property as its first "
                                  f"argument, found {_show(ref)}.")
        if ref.column.edm != STR:
            raise ODataQueryError(f"$filter: {name.value}() needs a text property; "
                                  f"'{ref.column.name}' is {ref.column.edm}.")
        if literal.kind != "string":
            raise ODataQueryError(f"$filter: {name.value}() needs a quoted string as its second "
                                  f"argument, found {_show(literal)}.")
        return ref.q(FUNCTIONS[name.value], literal.value)

    def operand(self) -> "Ref | Token":
        """A property (maybe in tolower/toupper) or a literal token."""
        token = self.take()
        if token.kind != "name" or token.value in ("true", "false", "null"):
            if token.kind in ("(", ")", ","):
                raise ODataQueryError(f"$filter: expected a property or a value at position "
                                      f"{token.pos}, found {_show(token)}.")
            return token
        following = self.peek()
        if following is not None and following.kind == "(":
            if token.value not in CASE_FUNCTIONS:
                raise ODataQueryError(f"$filter: function '{token.value}' is not supported; "
                                      f"supported: {SUPPORTED_FUNCTIONS}.")
            self.take()
            column = self.column(self.expect("name"))
            self.expect(")")
            if column.edm != STR:
                raise ODataQueryError(f"$filter: {token.value}() needs a text property; "
                                      f"'{column.name}' is {column.edm}.")
            return Ref(column, CASE_FUNCTIONS[token.value])
        return Ref(self.column(token))

    def comparison(self) -> Q:
        left = self.operand()
        op = self.take()
        if op.kind != "name" or op.value not in COMPARISONS:
            raise ODataQueryError(
                f"$filter: expected an operator (eq, ne, gt, ge, lt, le) at position {op.pos}, "
                f"found {_show(op)}.")
        right = self.operand()
        if isinstance(left, Ref) and isinstance(right, Ref):
            raise ODataQueryError(f"$filter: cannot compare two properties "
                                  f"('{left.column.name}' and '{right.column.name}').")
        if isinstance(left, Ref):
            ref, literal, operator = left, right, op.value
        elif isinstance(right, Ref):
            ref, literal, operator = right, left, _mirror(op.value)
        else:
            raise ODataQueryError(f"$filter: the comparison at position {left.pos} must name a "
                                  "property on one side.")
        column = ref.column
        value = self.literal(literal, column)
        if value is None:
            if operator not in ("eq", "ne"):
                raise ODataQueryError(f"$filter: only eq and ne compare with null "
                                      f"('{column.name} {operator} null').")
            q = Q(**{f"{column.alias}__isnull": True})
            return q if operator == "eq" else ~q
        if operator in ("gt", "ge", "lt", "le") and column.edm not in ORDERED_TYPES:
            raise ODataQueryError(f"$filter: '{column.name}' ({column.edm}) cannot be ordered "
                                  f"with {operator}.")
        q = ref.q(COMPARISONS[operator], value)
        if operator == "ne":
            # OData: null ne 5 is true; SQL's NULL <> 5 is not.
            return ~q | Q(**{f"{column.alias}__isnull": True})
        return q

    def column(self, token: Token):
        if token.kind != "name":
            raise ODataQueryError(f"$filter: expected a property name at position {token.pos}, "
                                  f"found {_show(token)}.")
        column = self.entity.by_name.get(token.value)
        if column is None:
            raise ODataQueryError(
                f"$filter: '{token.value}' is not a property of {self.entity.name}; known: "
                f"{', '.join(c.name for c in self.entity.columns if c.filterable)}.")
        if not column.filterable:
            raise ODataQueryError(f"$filter: '{column.name}' cannot be filtered on.")
        self.used.add(column.name)
        return column

    def literal(self, token: Token, column) -> Any:
        if token.kind == "name":
            if token.value == "null":
                return None
            if token.value in ("true", "false"):
                if column.edm != BOOL:
                    raise ODataQueryError(f"$filter: '{column.name}' is {column.edm}, not a "
                                          "boolean.")
                return token.value == "true"
            raise ODataQueryError(f"$filter: unexpected '{token.value}' at position {token.pos}.")
        expected = {INT: ("number",), FLOAT: ("number",), STR: ("string",), BOOL: (),
                    DATE: ("datetime",)}.get(column.edm, ())
        if token.kind not in expected:
            raise ODataQueryError(
                f"$filter: '{column.name}' is {column.edm}; {_show(token)} at position "
                f"{token.pos} is not a value of that type.")
        value = token.value
        if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
            raise ODataQueryError(
                f"$filter: the number {value} at position {token.pos} is out of range "
                f"(a 64-bit integer: {INT64_MIN} to {INT64_MAX}).")
        if isinstance(value, float) and not math.isfinite(value):
            raise ODataQueryError(
                f"$filter: the number at position {token.pos} is out of range for a "
                "double-precision value.")
        if column.edm == INT and isinstance(value, float) and not value.is_integer():
            return value  # 3.5 against an integer column is still a valid comparison
        return value


def _mirror(op: str) -> str:
    return {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}.get(op, op)


def _show(token: Token) -> str:
    if token.kind == "string":
        return f"string '{token.value}'"
    if token.kind in ("number", "datetime"):
        return f"{token.kind} {token.value}"
    return f"'{token.value}'"


def parse_filter(text: str, entity: EntitySet) -> Q:
    return parse_filter_columns(text, entity)[0]


def parse_filter_columns(text: str, entity: EntitySet) -> tuple[Q, set[str]]:
    """The filter as a Q over column aliases, and the names of the columns it reads."""
    if len(text) > MAX_FILTER_LENGTH:
        raise ODataQueryError(f"$filter is longer than {MAX_FILTER_LENGTH} characters.")
    parser = _Parser(text, entity)
    return parser.parse(), parser.used


def parse_select(text: str | None, entity: EntitySet) -> list[str]:
    if text is None or text.strip() in ("", "*"):
        return entity.column_names()
    names = [part.strip() for part in text.split(",")]
    unknown = [n for n in names if n not in entity.by_name]
    if unknown or "" in names:
        raise ODataQueryError(f"$select: unknown property {', '.join(unknown) or '(empty)'} of "
                              f"{entity.name}; known: {', '.join(entity.column_names())}.")
    return list(dict.fromkeys(names))


def parse_orderby(text: str | None, entity: EntitySet) -> list[str]:
    """Django order_by() arguments; the key always ends the list, so paging is stable."""
    order: list[str] = []
    if text is not None and text.strip():
        for part in text.split(","):
            words = part.split()
            if not words or len(words) > 2 or (len(words) == 2 and words[1] not in ("asc", "desc")):
                raise ODataQueryError(f"$orderby: cannot read {part.strip()!r}; write "
                                      "'property' or 'property desc'.")
            column = entity.by_name.get(words[0])
            if column is None:
                raise ODataQueryError(f"$orderby: '{words[0]}' is not a property of "
                                      f"{entity.name}.")
            descending = len(words) == 2 and words[1] == "desc"
            order.append(("-" if descending else "") + column.alias)
    key_alias = entity.by_name[entity.key].alias
    if key_alias not in {o.lstrip("-") for o in order}:
        order.append(key_alias)
    return order


def parse_nonnegative_int(name: str, text: str | None) -> int | None:
    if text is None or text == "":
        return None
    # ASCII digits only (str.isdigit() also takes '²' and other digits int() refuses).
    if _DIGITS_RE.fullmatch(text) is None:
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise ODataQueryError(f"{name} must be a non-negative integer, got {shown!r}.")
    stripped = text.lstrip("0") or "0"
    # Length first: int() of thousands of digits is slow, and refused past 4300 of them.
    if len(stripped) > len(str(MAX_PAGING_INT)) or int(stripped) > MAX_PAGING_INT:
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise ODataQueryError(f"{name} must be at most {MAX_PAGING_INT}, got {shown}.")
    return int(stripped)
