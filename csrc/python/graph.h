/* hrx.Graph and hrx.GraphNode (graph.c), and the trampoline that runs
 * their host callbacks. */
#ifndef HRX_PYTHON_GRAPH_H_
#define HRX_PYTHON_GRAPH_H_

#include "state.h"

/* The types' specs; module.c creates them (state->graph_node_type, then
 * state->graph_type). */
extern PyType_Spec hrx_py_graph_node_spec;
extern PyType_Spec hrx_py_graph_spec;

/* hrx._hrx._interpreter_exiting(), which hrx registers with atexit: from
 * then on, host callbacks still queued are skipped. */
PyObject* hrx_py_graph_interpreter_exiting(PyObject* module, PyObject* unused);

#endif /* HRX_PYTHON_GRAPH_H_ */
