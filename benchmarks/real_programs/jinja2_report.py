"""Jinja2 rendering a report from a template with a loop, a filter and a macro."""

from jinja2 import DictLoader, Environment

TEMPLATES = {
    "report.txt": (
        "{% macro row(name, qty) %}{{ name | title }}: {{ qty }}{% endmacro %}"
        "Report for {{ owner }}\n"
        "{% for name, qty in items | dictsort %}{{ row(name, qty) }}\n{% endfor %}"
        "Total: {{ items.values() | sum }}\n"
    )
}


def render(owner, items):
    env = Environment(loader=DictLoader(TEMPLATES), autoescape=False)
    template = env.get_template("report.txt")
    text = template.render(owner=owner, items=items)  # breakpoint
    return text


print(render("ada", {"apples": 3, "pears": 5, "plums": 0}), end="")
