"""Run-length encoding and decoding of a string."""


def encode(text):
    out = []
    count = 1
    for i in range(1, len(text) + 1):
        if i < len(text) and text[i] == text[i - 1]:
            count += 1
        else:
            out.append(f"{count}{text[i - 1]}")
            count = 1
    return "".join(out)


def decode(code):
    result = ""
    digits = ""
    for ch in code:
        if ch.isdigit():
            digits += ch
        else:
            result += ch * int(digits)
            digits = ""
    return result


packed = encode("aaabccdddd")
print(packed, decode(packed))
