"""``allocation-ledger completion bash``: a bash completion script for every command, its
choices and options, generated from the parser itself (so it never falls out of date).

    source <(allocation-ledger completion bash)
"""

from __future__ import annotations

import argparse

NAME = "completion"
HELP = "print a bash completion script (source <(allocation-ledger completion bash))"
EXAMPLES = """\
  source <(allocation-ledger completion bash)
  allocation-ledger completion bash > /etc/bash_completion.d/allocation-ledger
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The shell."""
    parser.add_argument("shell", choices=["bash"], help="the shell to complete in")


def run(args: argparse.Namespace) -> int:
    """Print the script."""
    from allocation_ledger.cli import _load, build_parser

    print(bash_script(build_parser(_load())))
    return 0


def bash_script(parser: argparse.ArgumentParser) -> str:
    """The completion function: commands first, then each command's words."""
    top = _words(parser)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    cases = []
    for name, cmd in sub.choices.items():
        cases.append(f'        {name}) words="{" ".join(_words(cmd))}" ;;')
    return "\n".join([
        "# bash completion for allocation-ledger (generated: allocation-ledger completion bash)",
        "_allocation_ledger() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" command="" words="" i',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        case "${COMP_WORDS[i]}" in',
        f"            {'|'.join(sub.choices)}) command=\"${{COMP_WORDS[i]}}\"; break ;;",
        "        esac",
        "    done",
        '    case "$command" in',
        f'        "") words="{" ".join([*sub.choices, *top])}" ;;',
        *cases,
        "    esac",
        '    COMPREPLY=($(compgen -W "$words" -- "$cur"))',
        "}",
        "complete -F _allocation_ledger allocation-ledger",
    ])


def _words(parser: argparse.ArgumentParser) -> list[str]:
    words: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        words.extend(action.option_strings)
        if not action.option_strings and action.choices:
            words.extend(str(c) for c in action.choices)
    return words
