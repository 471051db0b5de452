def parse_limit(text):
    return text.strip()


def over_limit(values, limit):
    out = []
    for v in values:
        if v > limit:
            out.append(v)
    return out


limit = parse_limit(" 5 ")
print(over_limit([3, 8, 6], limit))
