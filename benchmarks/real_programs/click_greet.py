"""A click CLI run as its users run it: `click_greet.py greet --count 2 --shout Ada`.
Standalone mode: click ends the program with sys.exit(0)."""

import click


@click.group()
@click.option("--verbose", is_flag=True, help="Say more.")
@click.pass_context
def cli(ctx, verbose):
    ctx.obj = {"verbose": verbose}


@cli.command()
@click.argument("name")
@click.option("--count", default=1, type=int, help="How many greetings.")
@click.option("--shout", is_flag=True)
@click.pass_obj
def greet(obj, name, count, shout):
    for k in range(count):
        message = f"Hello, {name}! ({k + 1}/{count})"  # breakpoint
        if shout:
            message = message.upper()
        click.echo(message)
    if obj["verbose"]:
        click.echo("done")


@cli.command()
@click.argument("words", nargs=-1)
def count(words):
    click.echo(f"{len(words)} words")


if __name__ == "__main__":
    cli()
