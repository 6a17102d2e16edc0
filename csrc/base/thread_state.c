/* The calling thread's block (thread_state.h). */
#include "thread_state.h"

_Thread_local hrx_thread_state_t hrx_thread_state_block;

void hrx_thread_mark_device_thread(void) {
  hrx_thread_state()->device_thread = true;
}
