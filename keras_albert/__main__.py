"""`python -m keras_albert` is the `keras-albert` command (where its console script is not on
PATH)."""

from keras_albert.commands import main

main()
