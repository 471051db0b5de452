def find(users, name):
    for user in users:
        if user["name"] == name:
            return user


def greeting(users, name):
    user = find(users, name.upper())
    return "hello " + user["name"].title()


users = [{"name": "ada"}, {"name": "alan"}]
print(greeting(users, "ada"))
