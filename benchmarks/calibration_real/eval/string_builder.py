"""Build an acronym and a slug from titles."""


def acronym(title):
    letters = ""
    for word in title.split():
        if word.lower() not in ("of", "the", "and"):
            letters += word[0].upper()
    return letters


def slug(title):
    return "-".join(title.lower().split())


titles = ["Portable Network Graphics", "Bank of the West", "read and write"]
for t in titles:
    print(acronym(t), slug(t))
