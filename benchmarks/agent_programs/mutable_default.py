# ruff: noqa: B006 (the bug this program is about)
def add_tag(tag, tags=[]):
    tags.append(tag)
    return tags


first = add_tag("red")
second = add_tag("blue")
print(first, second)
