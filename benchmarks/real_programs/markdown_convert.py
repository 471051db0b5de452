"""Python-Markdown converting a document with extensions, as a static site generator does."""

import markdown

DOCUMENT = """
# Release notes

Version **2.1** adds *time travel* to the debugger.

## Changes

- step back, reverse continue
- [the manual](https://example.org/manual)
- `restartFrame`

| command | key |
|---------|-----|
| next    | F10 |
| step in | F11 |

```python
def f(x):
    return x * 2
```

> Quoted text with a footnote[^1].

[^1]: The footnote.
"""


def convert(text):
    md = markdown.Markdown(extensions=["tables", "fenced_code", "footnotes", "toc"])
    html = md.convert(text)  # breakpoint
    return html, md.toc


html, toc = convert(DOCUMENT)
print(html)
print(toc)
