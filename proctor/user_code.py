"""User code named in a suite or on the command line (`package.module:attr` or
`path/to/file.py:attr`): agents, their Python tools, code graders, all imported into this process.

It imports nothing else of Proctor, so agents, metrics and loaders can all use it.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

# How an agent call failed by another case's agent code is worded (its event loop blocked, its
# call cancelled): not the case's own verdict, so `proctor resume` runs such a case again.
BY_ANOTHER_CASE = "by the agent code of case "


class AgentLoadError(ValueError):
    """The target cannot be imported or is not callable (agents, tools and graders alike)."""


@lru_cache(maxsize=256)
def load_python_target(target: str) -> Callable[..., Any]:
    """The callable `module:attr` or `file.py:attr` names; errors say what was tried."""
    module_ref, sep, attr = target.rpartition(":")
    if not sep or not module_ref or not attr:
        raise AgentLoadError(
            f"agent target {target!r} must look like 'package.module:attr' or 'file.py:attr'"
        )
    if module_ref.endswith(".py"):
        path = Path(module_ref)
        if not path.is_file():
            where = "" if path.is_absolute() else f" (a relative path is read from {Path.cwd()})"
            raise AgentLoadError(f"agent target {target!r}: file {path} not found{where}")
        # As `python agent.py` would: the agent's own folder is importable, so its sibling
        # packages (a `models` or `tasks` of its own) import as the user wrote them.
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        name = f"proctor_agent_{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise AgentLoadError(f"agent target {target!r}: cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as error:  # user code calling sys.exit() cannot end Proctor
            del sys.modules[name]
            raise AgentLoadError(f"agent target {target!r}: importing {path} failed: {error!r}") from None
    else:
        try:
            module = importlib.import_module(module_ref)
        except (Exception, SystemExit) as error:
            raise AgentLoadError(f"agent target {target!r}: cannot import {module_ref}: {error!r}") from None
    try:
        agent = getattr(module, attr)
    except AttributeError:
        raise AgentLoadError(
            f"agent target {target!r}: {module_ref} has no attribute {attr!r}{_callables_hint(module)}"
        ) from None
    if not callable(agent):
        raise AgentLoadError(f"agent target {target!r} is a {type(agent).__name__}, not a callable")
    return agent


def _callables_hint(module: Any) -> str:
    """What to write after the colon instead: the functions and classes the module defines."""
    names = sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and callable(value)
        and getattr(value, "__module__", None) == module.__name__
    )
    if not names:
        return "; it defines no function or class"
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return f"; it defines {shown}"


def describe_error(error: BaseException) -> str:
    """`Type: message` for an error user code raised, never raising itself: an exception
    whose `__str__` raises once stopped a whole run when its case's failure was written."""
    name = type(error).__name__
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001 - whatever a user's __str__ raises
        return f"{name} (its message cannot be shown: its __str__ raised)"
    return f"{name}: {text}" if text else name


def error_message(error: BaseException) -> str:
    """The error's message, or its type when it has none (or none that can be shown)."""
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001
        return describe_error(error)
    return text or type(error).__name__


# -- what user code running in Proctor's process cannot do to it ---------------------------
# Agents run in threads of Proctor's (`AgentThreads` for sync agents, the agent loop for async
# ones), each marked with the process it belongs to. `os._exit()` called there fails that
# call instead of ending the run with nothing said; a child forked there exits as soon as
# control comes back to Proctor, instead of running a second copy of the run.
_agent_thread = threading.local()
_real_exit = os._exit


class AgentCalledExit(SystemExit):
    """`os._exit()` called in an agent's thread: that agent call fails, the run goes on."""


def mark_agent_thread() -> None:
    """Called first thing in every thread that runs agent code."""
    _agent_thread.pid = os.getpid()
    install_exit_guard()


def in_forked_child() -> bool:
    """Whether this is a child the agent forked, back in Proctor's code."""
    pid = getattr(_agent_thread, "pid", None)
    return pid is not None and pid != os.getpid()


def leave_forked_child() -> None:
    """End a child an agent forked, without running anything of Proctor's in it."""
    _real_exit(0)


def _guarded_exit(status: int) -> None:
    if getattr(_agent_thread, "pid", None) == os.getpid():
        raise AgentCalledExit(f"os._exit({status}) called by the agent (the run goes on)")
    _real_exit(status)


def install_exit_guard() -> None:
    if os._exit is not _guarded_exit:
        os._exit = _guarded_exit
    if os.close is not _guarded_close:
        os.close = _guarded_close


# `os.close(1)` in an agent: the next file or socket any thread of the process opens takes
# descriptor 1, and whatever Proctor then prints goes there (a run's summary was written into
# an agent's own file, or into the Prefect API's connection, and the run exited 0 with nothing
# on the terminal). Standard input, output and error stay open; the agent's call is logged.
_STANDARD_DESCRIPTORS = (0, 1, 2)
_real_close = os.close


def _guarded_close(fd: int) -> None:
    if fd in _STANDARD_DESCRIPTORS and getattr(_agent_thread, "pid", None) == os.getpid():
        logging.getLogger("proctor.agent").warning(
            "an agent called os.close(%d) on standard %s; Proctor kept it open",
            fd,
            ("input", "output", "error")[fd],
        )
        return
    _real_close(fd)


@contextlib.contextmanager
def restoring_process_state(logger: Any) -> Iterator[None]:
    """What agent code may change for the whole process, put back when the run's cases are
    done, before its reports are written and its summary printed: the working directory
    (`os.chdir`), and standard output and error (closed by the agent). Each change is logged."""
    cwd = os.getcwd()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    was = {fd: _identity(fd) for fd in (1, 2)}
    try:
        yield
    finally:
        try:
            moved = os.getcwd() != cwd
        except OSError:  # the agent's working directory was deleted under it
            moved = True
        if moved:
            os.chdir(cwd)
            logger.warning("an agent changed the working directory; Proctor changed it back to %s", cwd)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            _reopen(fd, name, saved[fd], was[fd], logger)
            _real_close(saved[fd])


def _identity(fd: int) -> tuple[int, int] | None:
    """Which open file a descriptor is (device and inode), or None when it is closed."""
    try:
        found = os.fstat(fd)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def _reopen(fd: int, name: str, saved: int, was: tuple[int, int] | None, logger: Any) -> None:
    """Standard output or error as they were, when an agent closed them or pointed them
    elsewhere (`os.dup2` onto them)."""
    now = _identity(fd)
    if now is None:  # the file descriptor itself was closed
        os.dup2(saved, fd)
    elif now != was:
        os.dup2(saved, fd)
        shown = name.removeprefix("std")
        logger.warning("an agent pointed standard %s elsewhere; Proctor put it back", shown)
    stream = getattr(sys, name)
    if stream is not None and not stream.closed:
        return
    fresh = open(fd, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)  # noqa: SIM115
    setattr(sys, name, fresh)
    for handler in [*logging.getLogger().handlers, *logging.getLogger("proctor").handlers]:
        if isinstance(handler, logging.StreamHandler) and getattr(handler.stream, "closed", False):
            handler.setStream(fresh)
    logger.warning("an agent closed standard %s; Proctor opened it again", name.removeprefix("std"))


def agent_threads_left() -> list[threading.Thread]:
    """Threads that would keep the process from exiting (not daemons) that are not Proctor's
    own: left running by user code."""
    return [
        thread
        for thread in threading.enumerate()
        if thread is not threading.main_thread() and not thread.daemon and thread.is_alive()
    ]


def describe_thread(thread: threading.Thread) -> str:
    target = getattr(thread, "_target", None)
    where = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', '?')}" if target else ""
    return f"{thread.name!r}" + (f" running {where}" if where else "")
