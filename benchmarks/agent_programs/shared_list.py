def split_evens(xs):
    evens = odds = []
    for x in xs:
        if x % 2 == 0:
            evens.append(x)
        else:
            odds.append(x)
    return evens, odds


evens, odds = split_evens([1, 2, 3, 4])
print(evens, odds)
