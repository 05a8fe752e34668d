"""A chat template from a stranger's tokenizer folder, rendered within limits before transformers renders it.

transformers renders a chat template in Jinja's ImmutableSandboxedEnvironment (no attribute escapes), with no bound
on its work: nested loops run for hours and `'x' * 10**10` asks for 10 GB. So every conversation is first rendered
here, in the same sandbox with a time limit, a loop limit and an output limit; only a conversation whose render stays
within them reaches transformers, whose render of the same template and messages does the same work. Each error is
one line naming the template and the limit it crossed (or the template's own error and line).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from functools import wraps
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

from openrecipes.errors import UserError

TEMPLATE_SECONDS = 5.0  # per conversation; a real chat template renders one in well under a millisecond
MAX_LOOP_ITERATIONS = 100_000  # per conversation, every loop together; a template loops over the messages
MAX_OUTPUT_CHARS = 1 << 24  # per conversation (16 Mi characters), and so any string built on the way
# A width or precision of seven digits or more in a format string ('%9999999d', '{:>9999999}') pads past the limit.
_WIDE_FORMAT = re.compile(r"%[-#0 +]*(?:\*|\d{7,})|%[-#0 +]*\d*\.(?:\*|\d{7,})|\{[^{}]*:[^{}]*\d{7,}[^{}]*\}")
_LOOP_GUARD, _JOIN = "__openrecipes_loop", "__openrecipes_join"


class TemplateLimit(UserError):
    """A render crossed a limit (said without the template's name, which the caller adds)."""


class _Generation(Extension):
    """`{% generation %} ... {% endgeneration %}`, which transformers' templates mark assistant content with: here
    rendered as its body (the mask is transformers' to compute)."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> nodes.Node:
        line = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(line)

    def _body(self, caller: Callable[[], str]) -> str:
        return caller()


class _BoundedSandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox whose every operator, call and loop step counts against one render's budget."""

    intercepted_binops = frozenset({"*", "**", "+", "%", "//"})

    def __init__(self) -> None:
        super().__init__(trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, "jinja2.ext.loopcontrols"])
        self.deadline = 0.0
        self.iterations = 0
        self.filters = {name: _bounded_filter(self, function) for name, function in self.filters.items()}
        self.globals.update({_LOOP_GUARD: self.counted, _JOIN: self.joined})

    def start(self) -> None:
        self.deadline, self.iterations = time.monotonic() + TEMPLATE_SECONDS, 0

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateLimit(f"ran over the time limit of {TEMPLATE_SECONDS:g} s for one conversation")

    def counted(self, iterable: Iterable[Any]) -> Iterator[Any]:
        for item in iterable:
            self.iterations += 1
            if self.iterations > MAX_LOOP_ITERATIONS:
                raise TemplateLimit(f"ran over the loop limit of {MAX_LOOP_ITERATIONS:,} iterations for one "
                                    "conversation")
            self.tick()
            yield item

    def joined(self, *parts: Any) -> str:
        """`a ~ b`: its length checked before the string is made."""
        texts = [str(part) for part in parts]
        _check_size(sum(map(len, texts)), "a joined string (~)")
        return "".join(texts)

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        self.tick()
        _check_operands(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        __self.tick()
        _check_arguments(__obj, args, kwargs)
        return _checked_result(super().call(__context, __obj, *args, **kwargs))


def _check_size(size: int, what: str) -> None:
    if size > MAX_OUTPUT_CHARS:
        raise TemplateLimit(f"{what} of {size:,} characters is over the output limit of {MAX_OUTPUT_CHARS:,} "
                            "characters for one conversation")


def _length(value: Any) -> int | None:
    return len(value) if isinstance(value, (str, list, tuple)) else None


def _check_operands(operator: str, left: Any, right: Any) -> None:
    """Refuse an operation whose result would be over the output limit, before it is computed."""
    sizes = (_length(left), _length(right))
    if operator == "*":
        for size, times in ((sizes[0], right), (sizes[1], left)):
            if size is not None and isinstance(times, int):
                _check_size(size * max(times, 0), "a repeated string or list (*)")
    elif operator == "+" and None not in sizes:
        _check_size(sizes[0] + sizes[1], "a joined string or list (+)")  # type: ignore[operator]
    elif operator == "**" and isinstance(left, int) and isinstance(right, int):
        if right > 0 and abs(left) > 1 and abs(left).bit_length() * right > 4 * MAX_OUTPUT_CHARS:
            raise TemplateLimit(f"a power {left} ** {right} is over the output limit")
    elif operator == "%" and isinstance(left, str) and _WIDE_FORMAT.search(left):
        raise TemplateLimit("a format string with a field width of a million characters or more is over the output "
                            "limit")


def _check_arguments(function: Any, args: tuple, kwargs: dict) -> None:
    """A call that is told to make something over the limit (a width, a count, a range) is refused before it runs;
    a str method that multiplies its string (replace, join, format) is measured first."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_OUTPUT_CHARS:
            raise TemplateLimit(f"an argument of {value:,} is over the output limit of {MAX_OUTPUT_CHARS:,}")
    owner, name = getattr(function, "__self__", None), getattr(function, "__name__", "")
    if isinstance(owner, str):
        if name == "replace" and len(args) >= 2 and all(isinstance(a, str) for a in args[:2]):
            _check_size(len(owner) + owner.count(args[0]) * max(len(args[1]) - len(args[0]), 0) if args[0] else
                        len(owner) * (len(args[1]) + 1), "a replaced string")
        elif name == "join" and args and isinstance(args[0], (list, tuple)):
            _check_size(sum(len(str(a)) for a in args[0]) + len(owner) * len(args[0]), "a joined string")
        elif name in ("format", "format_map") and _WIDE_FORMAT.search(owner):
            raise TemplateLimit("a format string with a field width of a million characters or more is over the "
                                "output limit")


def _checked_result(value: Any) -> Any:
    size = _length(value)
    if size is not None:
        _check_size(size, "a value")
    return value


def _bounded_filter(sandbox: _BoundedSandbox, function: Callable) -> Callable:
    """A built-in filter with its arguments and result checked like a call's (|center(10**9), |replace, |join)."""
    @wraps(function)  # keeps jinja's pass_context / pass_environment marks
    def bounded(*args: Any, **kwargs: Any) -> Any:
        sandbox.tick()
        values = [a for a in args if not isinstance(a, (jinja2.runtime.Context, jinja2.Environment,
                                                       jinja2.nodes.EvalContext))]
        _check_arguments(function, tuple(values[1:]), kwargs)
        if function.__name__ in ("do_replace", "do_join") and values and isinstance(values[0], (str, list, tuple)):
            subject = values[0]
            if function.__name__ == "do_replace" and len(values) >= 3:
                _check_arguments(str(subject).replace, (str(values[1]), str(values[2])), {})
            elif function.__name__ == "do_join":
                separator = values[1] if len(values) > 1 else kwargs.get("d", "")
                _check_arguments(str(separator).join, ([str(item) for item in subject],), {})
        if function.__name__ == "do_format" and values and isinstance(values[0], str) and _WIDE_FORMAT.search(
                values[0]):
            raise TemplateLimit("a format string with a field width of a million characters or more is over the "
                                "output limit")
        return _checked_result(function(*args, **kwargs))

    return bounded


def _raise_exception(message: str) -> None:
    raise jinja2.TemplateError(message)


class BoundedTemplate:
    """A chat template compiled in the bounded sandbox; `check` renders one conversation within the limits."""

    def __init__(self, source: str, where: str, strftime_now: Callable[[str], str]):
        self.where = where
        self.sandbox = _BoundedSandbox()
        self.sandbox.globals.update(raise_exception=_raise_exception, strftime_now=strftime_now, dict=dict,
                                    namespace=jinja2.utils.Namespace)
        try:
            tree = self.sandbox.parse(source)
            _guard(tree)
            self.template = self.sandbox.from_string(tree)
        except jinja2.TemplateSyntaxError as error:
            raise UserError(f"{where}: chat_template line {error.lineno}: {error.message}; fix the template") from None
        except (jinja2.TemplateError, RecursionError, ValueError) as error:
            raise UserError(f"{where}: chat_template cannot be compiled ({_one_line(error)}); fix the template") \
                from None

    def check(self, variables: dict[str, Any]) -> None:
        """Render once with `variables` (messages, special tokens), within the limits; else a UserError."""
        self.sandbox.start()
        written = 0
        try:
            for chunk in self.template.generate(**variables):
                written += len(chunk)
                _check_size(written, "the rendered conversation")
        except TemplateLimit as error:
            raise UserError(f"{self.where}: chat_template: {error}; a chat template renders the messages, "
                            "no more: fix the template") from None
        except UserError:
            raise
        except RecursionError:
            raise UserError(f"{self.where}: chat_template: recursion deeper than Python allows (a macro or loop "
                            "calling itself); fix the template") from None
        except MemoryError:
            raise UserError(f"{self.where}: chat_template: ran out of memory rendering one conversation; fix the "
                            "template") from None
        except Exception as error:  # the template's own error: raise_exception, a bad filter, 1/0, ...
            raise UserError(f"{self.where}: chat_template failed: {_one_line(error)}; fix the template") from None


def _guard(tree: nodes.Template) -> None:
    """Every loop's items counted and every `~` measured, by rewriting the parsed template: a for loop iterates
    over the loop guard of its items, and a concatenation is a call that checks its length first."""
    for loop in list(tree.find_all(nodes.For)):
        loop.iter = nodes.Call(nodes.Name(_LOOP_GUARD, "load"), [loop.iter], [], None, None)
    for concat in list(tree.find_all(nodes.Concat)):
        joined = nodes.Call(nodes.Name(_JOIN, "load"), list(concat.nodes), [], None, None)
        concat.nodes = [joined]


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 200 else text[:200] + "..."
