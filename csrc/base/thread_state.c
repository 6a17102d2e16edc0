/* The calling thread's block (thread_state.h). */
#include "thread_state.h"

_Thread_local hrx_thread_state_t hrx_thread_state_block;
