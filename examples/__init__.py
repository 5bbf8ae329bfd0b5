"""The repository's demonstration: the main job (`bash tools/run.sh main`, which runs
`python -m examples.main`), a user of the library's public functions. Not installed: the wheel
holds `keras_albert` alone, and the library never imports this package (setup.cfg's import
contracts).

A regular package (this file), not a namespace: tf2onnx installs a top-level `examples`
folder without one, and a regular package is imported before any namespace portion.
"""
