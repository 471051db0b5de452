"""difflib and textwrap: a unified diff of two versions of a text, and the text re-wrapped."""

import difflib
import textwrap

OLD = """The debugger records the program once and then travels through the recording.
It can step forward and back.
Breakpoints work as usual.
"""
NEW = """The debugger records the program once and then travels through that execution.
It can step forward and back, and reverse continue.
Breakpoints work as usual.
Conditions are supported.
"""


def main():
    diff = list(difflib.unified_diff(OLD.splitlines(), NEW.splitlines(), "old", "new", lineterm=""))
    ratio = difflib.SequenceMatcher(None, OLD, NEW).ratio()  # breakpoint
    print("\n".join(diff))
    print(f"similarity {ratio:.3f}")
    print(textwrap.fill(NEW.replace("\n", " "), width=40, initial_indent="> ", subsequent_indent="> "))
    print(textwrap.shorten(NEW, width=50, placeholder=" [...]"))


main()
