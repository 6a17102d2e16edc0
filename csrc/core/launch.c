/* Kernel launches on streams (hrx.h, hrx_stream_launch): the launch is
 * checked and prepared (kernel.h), then handed to the stream's
 * publication like a small copy (stream.h, hrx_stream_enqueue), which
 * publishes it at once or gathers it into the stream's pending batch. */
#include "base/status.h"
#include "kernel.h"
#include "stream.h"

hrx_status_t hrx_stream_launch(hrx_stream_t* stream, hrx_kernel_t* kernel,
                               const hrx_launch_config_t* config,
                               const hrx_kernel_arg_t* args,
                               size_t arg_count) {
  if (!stream) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "stream is NULL");
  }
  hrx_kernel_prepared_t prepared;
  HRX_RETURN_IF_ERROR(hrx_kernel_prepare_launch(
      kernel, hrx_stream_device(stream), "the stream runs on",
      "buffers are usable only on their own device", config, args, arg_count,
      &prepared));
  /* Borrowed here: the publication copies it if the launch has to wait in
   * the stream's pending batch (hrx_kernel_pending_launch_make). */
  hrx_batch_command_t command = {.kind = HRX_BATCH_LAUNCH,
                                 .kernel = hrx_kernel_native(kernel),
                                 .launch = &prepared.launch,
                                 .owner = kernel};
  return hrx_stream_enqueue(stream, &command, "launching a kernel");
}
