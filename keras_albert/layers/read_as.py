"""`ReadAs`: a `keras.StatelessScope` in which chosen variables read as given tensors."""

import keras


class ReadAs(keras.StatelessScope):
    """Within it, the variables of `values` read as the tensors given, as they are (no cast
    back to the variable's dtype, as `keras.StatelessScope(state_mapping)` would), and every
    other variable as outside it. What is assigned within (the dropout layers' seed states)
    reads back within; on exit it is assigned for real with `assign_on_exit`, else dropped.

    Args:
        values: (variable, tensor) pairs.
        assign_on_exit: assign for real, on exit, what was assigned within.
    """

    def __init__(self, values, *, assign_on_exit):
        super().__init__()
        self._values = {id(variable): value for variable, value in values}
        self._assign_on_exit = assign_on_exit
        self._assigned = {}

    def get_current_value(self, variable):
        key = id(variable)
        if key in self.state_mapping:  # assigned within
            return self.state_mapping[key]
        if key in self._values:
            return self._values[key]
        # As outside: an enclosing scope's value (`Model.stateless_call`), else the variable's.
        if self.original_scope is not None:
            return self.original_scope.get_current_value(variable)
        return None

    def add_update(self, update):
        variable, _ = update
        self._assigned[id(variable)] = variable
        super().add_update(update)

    def __exit__(self, exception_type, *args):
        super().__exit__(exception_type, *args)
        if exception_type is None and self._assign_on_exit:
            # A seed generator that does not advance draws the same dropout masks every step.
            for key, variable in self._assigned.items():
                variable.assign(self.state_mapping[key])
