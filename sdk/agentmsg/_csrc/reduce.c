/* agentmsg._speedups: the reducer's fast path for a whole list of trusted events (see events/reducer.py). */
#include "cstream.h"

PyObject *cs_reduce_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    (void)args;
    (void)nargs;
    Py_RETURN_NONE; /* not written yet: the Python reducer folds every list */
}
