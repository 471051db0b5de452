"""Course enrolments with set operations."""

maths = {"ann", "bob", "cat", "dan"}
physics = {"bob", "dan", "eve"}
art = {"ann", "eve", "fay"}

both = maths & physics
only_maths = maths - physics - art
everyone = maths | physics | art
exactly_one = {s for s in everyone if sum(s in c for c in (maths, physics, art)) == 1}
print(sorted(both), sorted(only_maths), len(everyone), sorted(exactly_one))
