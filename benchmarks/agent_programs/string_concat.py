def parse_total(lines):
    total = 0
    for line in lines:
        amount = line.split(",")[1]
        total = total + amount
    return total


print(parse_total(["a,1", "b,2"]))
