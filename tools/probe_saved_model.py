"""`keras-albert probe` as a script (keras_albert/commands/probe.py), for a checkout.

Run from its file, as the command does: the probe checks that an export stands on its own, so
nothing here imports keras_albert (finding the package imports none of it).
"""

import importlib.util
import os
import runpy

package = importlib.util.find_spec("keras_albert").submodule_search_locations[0]
runpy.run_path(os.path.join(package, "commands", "probe.py"), run_name="__main__")
