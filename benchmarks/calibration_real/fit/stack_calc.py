"""A reverse-Polish calculator on a stack."""

import operator

OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def rpn(expression):
    stack = []
    for token in expression.split():
        if token in OPS:
            right = stack.pop()
            left = stack.pop()
            stack.append(OPS[token](left, right))
        else:
            stack.append(float(token))
    return stack[0]


print(rpn("3 4 + 2 *"), rpn("5 1 2 + 4 * + 3 -"))
