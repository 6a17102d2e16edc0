/* Graphs are declared in hrx.h; this header only ties graph.c into the
 * core's one-pair-per-concept layout. */
#ifndef HRX_CORE_GRAPH_H_
#define HRX_CORE_GRAPH_H_

#include "hrx.h"

#endif /* HRX_CORE_GRAPH_H_ */
