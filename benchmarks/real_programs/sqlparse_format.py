"""sqlparse formatting and splitting SQL, as a migration tool does."""

import sqlparse

SQL = (
    "select u.id, u.name, count(o.id) as orders from users u left join orders o on o.user_id = u.id "
    "where u.active = 1 and o.created > '2024-01-01' group by u.id, u.name having count(o.id) > 2 "
    "order by orders desc; insert into audit(event) values ('report');"
)


def main():
    statements = sqlparse.split(SQL)
    for statement in statements:
        formatted = sqlparse.format(statement, reindent=True, keyword_case="upper")  # breakpoint
        print(formatted)
        parsed = sqlparse.parse(statement)[0]
        print("--", parsed.get_type())


main()
