"""A warm process: Proctor and Prefect imported once, each `proctor` command forked from it.

A command pays about two seconds importing Prefect, Proctor, SQLAlchemy and Pydantic before it
does anything; most of a short run against a Prefect server is that. `proctor warm start`
leaves one process with all of it imported; from then on the `proctor` command (`client`)
hands its arguments, folder, environment and terminal to that process, which forks a child
that runs the command exactly as the command would have, in its own process. Without a warm
process, or when it cannot serve a command as that command would run, the command runs as
usual: the warm process only ever saves time.
"""
