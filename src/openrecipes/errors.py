"""The one error type for bad input: the CLI prints its message on one line and exits 2, never a traceback."""


class UserError(Exception):
    """Bad input a user can fix; the message names the file, the field or line, and the fix."""


EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT = 0, 1, 2
