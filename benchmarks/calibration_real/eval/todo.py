"""A to-do list with priorities and completion."""


class TodoList:
    def __init__(self):
        self.items = {}
        self.next_id = 1

    def add(self, title, priority=2):
        item_id = self.next_id
        self.items[item_id] = {"title": title, "priority": priority, "done": False}
        self.next_id += 1
        return item_id

    def complete(self, item_id):
        self.items[item_id]["done"] = True

    def pending(self):
        open_items = [(i["priority"], i["title"]) for i in self.items.values() if not i["done"]]
        return [title for _, title in sorted(open_items)]


todo = TodoList()
first = todo.add("write report", 1)
todo.add("email team")
todo.add("book room", 3)
todo.complete(first)
print(todo.pending(), todo.next_id)
