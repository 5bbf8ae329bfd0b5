"""`keras-albert convert` as a script: keras_albert/commands/convert.py."""

from keras_albert.cli import run_tool
from keras_albert.commands import command_module

command = command_module("convert")
build_parser, main = command.build_parser, command.main

if __name__ == "__main__":
    run_tool(main)
