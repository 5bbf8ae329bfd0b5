"""`keras-albert finetune` as a script: keras_albert/commands/finetune.py."""

from keras_albert.cli import run_tool
from keras_albert.commands import command_module

command = command_module("finetune")
build_parser, main = command.build_parser, command.main

if __name__ == "__main__":
    run_tool(main)
