"""docutils turning reStructuredText into HTML fragments, as Sphinx-less projects do."""

from docutils.core import publish_parts

SOURCE = """
Title
=====

A paragraph with *emphasis*, **strong** text and ``code``.

- one
- two

  - nested

.. note:: A note.

=====  =====
a      b
=====  =====
1      2
=====  =====
"""


def render(text):
    settings = {"report_level": 5, "halt_level": 5, "embed_stylesheet": False}
    parts = publish_parts(text, writer_name="html", settings_overrides=settings)  # breakpoint
    return parts["title"], parts["body"]


title, body = render(SOURCE)
print(title)
print(body)
