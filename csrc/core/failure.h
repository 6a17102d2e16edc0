/* A stream's failure state, and the list of a device's streams that hold
 * a failure no observation has raised yet (so that the device's
 * synchronize raises them too).
 *
 * The rules (hrx.h, "Failures"; the same with batching on and off): a
 * command whose publication fails marks its stream failed; commands
 * accepted after it are not run (counted); the next observation point or
 * the device's synchronize raises the failure, naming the command and how
 * many were not run, and the stream is usable again.
 *
 * Locks: a failure's mutex and its list's; both are held together only by
 * hrx_failure_list_take_all (the list's, then each failure's), and neither
 * across a wait. Thread-safe. */
#ifndef HRX_CORE_FAILURE_H_
#define HRX_CORE_FAILURE_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hrx.h"

typedef struct hrx_failure_s hrx_failure_t;

/* A device's failed streams. */
typedef struct hrx_failure_list_s {
  pthread_mutex_t mutex;
  hrx_failure_t* head;  /* borrowed: listed failures; mutex */
} hrx_failure_list_t;

struct hrx_failure_s {
  pthread_mutex_t mutex;
  atomic_bool failed;        /* status != NULL; written under mutex */
  hrx_status_t status;       /* owned; the failed command, not raised; mutex */
  uint64_t not_run;          /* commands skipped since; mutex */
  hrx_failure_list_t* list;  /* borrowed: the device's */
  hrx_failure_t* prev;       /* on the list while listed; the list's mutex */
  hrx_failure_t* next;
  bool listed;
};

void hrx_failure_list_initialize(hrx_failure_list_t* list);
void hrx_failure_list_deinitialize(hrx_failure_list_t* list);

void hrx_failure_initialize(hrx_failure_t* failure, hrx_failure_list_t* list);
/* Unlisted first (hrx_failure_unlist). Frees a failure still held. */
void hrx_failure_deinitialize(hrx_failure_t* failure);
/* Takes the failure off its list (the stream goes); nothing if it is not
 * listed. */
void hrx_failure_unlist(hrx_failure_t* failure);

/* Lock-free: whether a failure is held (commands are not run). */
static inline bool hrx_failure_held(const hrx_failure_t* failure) {
  return atomic_load(&failure->failed);
}

/* Marks the stream failed by command `number` (`what`, "copy of 16 bytes");
 * `skipped` commands accepted after it were dropped unpublished. Takes
 * `status`; lists the failure. The caller is the stream's one publisher at
 * a time (its publication lock), so a held failure is never replaced. */
void hrx_failure_record(hrx_failure_t* failure, hrx_status_t status,
                        uint64_t number, const char* what, uint64_t skipped);
/* Counts commands that were accepted but not run (the stream had failed). */
void hrx_failure_skip(hrx_failure_t* failure, uint64_t count);

/* What an observation point raises: the failure with how many commands
 * were not run (`how` ends the message: hrx_failure_usable_again for an
 * observation, "" where the stream goes), unlisted, and the stream usable
 * again; NULL when none is held. The caller owns the status. */
hrx_status_t hrx_failure_take(hrx_failure_t* failure, const char* how);
extern const char hrx_failure_usable_again[];

/* The device's synchronize: every listed failure taken, as the first
 * one's status naming how many other streams failed too (their messages
 * follow, shortened); NULL when none. */
hrx_status_t hrx_failure_list_take_all(hrx_failure_list_t* list);

/* "copy of 16 bytes" (or `what` alone for 0 bytes), the words a failure
 * names its command with, the same for a lone and a batched command. */
void hrx_failure_describe(const char* what, uint64_t bytes, char* buffer,
                          size_t capacity);

#endif /* HRX_CORE_FAILURE_H_ */
