"""Check that brackets in expressions balance."""

PAIRS = {")": "(", "]": "[", "}": "{"}


def balanced(text):
    stack = []
    for position, ch in enumerate(text):
        if ch in "([{":
            stack.append(ch)
        elif ch in PAIRS:
            if not stack or stack.pop() != PAIRS[ch]:
                return False, position
    return not stack, len(text)


checks = {expr: balanced(expr) for expr in ["(a[1] + b)", "{[}]", "((x)"]}
print(checks)
