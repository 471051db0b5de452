def count_leaves(node):
    kids = node.get("kids")
    if not kids:
        if "leaf" in node:
            return 1
        return
    n = 0
    for kid in kids:
        sub = count_leaves(kid)
        n += sub
    return n


tree = {"kids": [{"leaf": "a"}, {"kids": []}, {"leaf": "b"}]}
print(count_leaves(tree))
