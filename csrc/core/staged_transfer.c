/* Pipelined host copies of large pageable transfers (staged_transfer.h). */
#include "staged_transfer.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/environment.h"
#include "base/status.h"
#include "base/streaming_copy.h"

/* One copy in progress: the caller's, on its stack. The pieces not yet
 * taken and the done flags are the copier's (its mutex). */
typedef struct hrx_staged_job_s {
  uint8_t* dst;
  const uint8_t* src;
  uint64_t length;
  uint64_t piece_bytes;
  uint64_t pieces;
  bool streaming;          /* pieces write around the caches */
  uint64_t next_piece;     /* mutex: the next piece to take */
  uint64_t ready_pieces;   /* mutex: the copied prefix, in pieces */
  uint64_t finished;       /* mutex: pieces copied and reported */
  uint8_t* done;           /* owned, mutex: one flag per piece */
  hrx_staged_ready_fn_t ready;
  void* user_data;
  pthread_cond_t finished_cond;
  struct hrx_staged_job_s* next;  /* the copier's list of jobs with pieces
                                     left */
} hrx_staged_job_t;

struct hrx_staged_copier_s {
  hrx_staged_copy_settings_t settings;  /* immutable */
  pthread_mutex_t mutex;
  pthread_cond_t work_cond;    /* a job came, or stopping */
  hrx_staged_job_t* head;      /* jobs with pieces left, oldest first */
  hrx_staged_job_t* tail;
  pthread_t* threads;          /* owned: settings.threads slots */
  uint32_t started;            /* mutex */
  bool starting_done;          /* mutex: the threads were started (or
                                  could not all be) */
  bool stopping;               /* mutex */
};

hrx_status_t hrx_staged_copy_settings_from_environment(
    hrx_staged_copy_settings_t* out_settings) {
  int64_t fallback = hrx_env_usable_cpus() / 2;
  if (fallback < 1) fallback = 1;
  if (fallback > HRX_STAGED_COPY_DEFAULT_MAX_THREADS) {
    fallback = HRX_STAGED_COPY_DEFAULT_MAX_THREADS;
  }
  int64_t threads = 0;
  int64_t min_bytes = 0;
  bool streaming = true;
  HRX_RETURN_IF_ERROR(hrx_env_int("HRX_STAGED_COPY_THREADS", fallback, 0,
                                  HRX_STAGED_COPY_MAX_THREADS, &threads));
  HRX_RETURN_IF_ERROR(hrx_env_int(
      "HRX_STAGED_COPY_MIN_BYTES", (int64_t)HRX_STAGED_COPY_DEFAULT_MIN_BYTES,
      (int64_t)HRX_STAGED_COPY_MIN_MIN_BYTES, (int64_t)1 << 40, &min_bytes));
  HRX_RETURN_IF_ERROR(
      hrx_env_switch("HRX_STAGED_COPY_STREAMING", true, &streaming));
  out_settings->threads = (uint32_t)threads;
  out_settings->min_bytes = (uint64_t)min_bytes;
  out_settings->streaming = streaming;
  return NULL;
}

hrx_status_t hrx_staged_copier_create(const hrx_staged_copy_settings_t* settings,
                                      hrx_staged_copier_t** out_copier) {
  hrx_staged_copier_t* copier = calloc(1, sizeof(*copier));
  if (copier && settings->threads) {
    copier->threads = calloc(settings->threads, sizeof(pthread_t));
    if (!copier->threads) {
      free(copier);
      copier = NULL;
    }
  }
  if (!copier) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate the staged copy threads");
  }
  copier->settings = *settings;
  pthread_mutex_init(&copier->mutex, NULL);
  pthread_cond_init(&copier->work_cond, NULL);
  *out_copier = copier;
  return NULL;
}

void hrx_staged_copier_destroy(hrx_staged_copier_t* copier) {
  if (!copier) return;
  pthread_mutex_lock(&copier->mutex);
  copier->stopping = true;
  pthread_cond_broadcast(&copier->work_cond);
  uint32_t started = copier->started;
  pthread_mutex_unlock(&copier->mutex);
  for (uint32_t i = 0; i < started; ++i) {
    pthread_join(copier->threads[i], NULL);
  }
  pthread_cond_destroy(&copier->work_cond);
  pthread_mutex_destroy(&copier->mutex);
  free(copier->threads);
  free(copier);
}

bool hrx_staged_copier_applies(const hrx_staged_copier_t* copier,
                               uint64_t length) {
  return copier && copier->settings.threads &&
         length >= copier->settings.min_bytes;
}

/* Takes the next piece of the oldest job with pieces left (mutex held);
 * false when there is none. `only` (may be NULL) restricts it to that
 * job. */
static bool hrx_staged_take_locked(hrx_staged_copier_t* copier,
                                   hrx_staged_job_t* only,
                                   hrx_staged_job_t** out_job,
                                   uint64_t* out_piece) {
  hrx_staged_job_t* job = only ? only : copier->head;
  if (!job || job->next_piece == job->pieces) return false;
  uint64_t piece = job->next_piece++;
  if (job->next_piece == job->pieces) {
    /* Its last piece: off the list (it is the head unless `only`). */
    hrx_staged_job_t** link = &copier->head;
    hrx_staged_job_t* previous = NULL;
    while (*link && *link != job) {
      previous = *link;
      link = &(*link)->next;
    }
    if (*link) {
      *link = job->next;
      if (copier->tail == job) copier->tail = previous;
    }
    job->next = NULL;
  }
  *out_job = job;
  *out_piece = piece;
  return true;
}

/* Copies one piece and reports it (mutex not held on entry or exit). */
static void hrx_staged_copy_piece(hrx_staged_copier_t* copier,
                                  hrx_staged_job_t* job, uint64_t piece) {
  uint64_t offset = piece * job->piece_bytes;
  uint64_t bytes = job->length - offset;
  if (bytes > job->piece_bytes) bytes = job->piece_bytes;
  hrx_host_copy(job->dst + offset, job->src + offset, bytes, job->streaming);
  pthread_mutex_lock(&copier->mutex);
  job->done[piece] = 1;
  uint64_t before = job->ready_pieces;
  while (job->ready_pieces < job->pieces && job->done[job->ready_pieces]) {
    job->ready_pieces++;
  }
  uint64_t ready_pieces = job->ready_pieces;
  pthread_mutex_unlock(&copier->mutex);
  if (job->ready && ready_pieces != before) {
    uint64_t ready = ready_pieces * job->piece_bytes;
    job->ready(job->user_data, ready < job->length ? ready : job->length);
  }
  /* Counted only after its report: the caller's job outlives this. */
  pthread_mutex_lock(&copier->mutex);
  if (++job->finished == job->pieces) {
    pthread_cond_broadcast(&job->finished_cond);
  }
  pthread_mutex_unlock(&copier->mutex);
}

static void* hrx_staged_copier_main(void* arg) {
  hrx_staged_copier_t* copier = arg;
  pthread_mutex_lock(&copier->mutex);
  for (;;) {
    hrx_staged_job_t* job = NULL;
    uint64_t piece = 0;
    if (hrx_staged_take_locked(copier, NULL, &job, &piece)) {
      pthread_mutex_unlock(&copier->mutex);
      hrx_staged_copy_piece(copier, job, piece);
      pthread_mutex_lock(&copier->mutex);
      continue;
    }
    if (copier->stopping) break;
    pthread_cond_wait(&copier->work_cond, &copier->mutex);
  }
  pthread_mutex_unlock(&copier->mutex);
  return NULL;
}

/* Starts the threads once (mutex held). A thread that cannot be started
 * leaves fewer: the callers copy what the threads do not. */
static void hrx_staged_start_locked(hrx_staged_copier_t* copier) {
  if (copier->starting_done || copier->stopping) return;
  copier->starting_done = true;
  while (copier->started < copier->settings.threads) {
    if (pthread_create(&copier->threads[copier->started], NULL,
                       hrx_staged_copier_main, copier) != 0) {
      break;
    }
    copier->started++;
  }
}

void hrx_staged_copy(hrx_staged_copier_t* copier, void* dst, const void* src,
                     uint64_t length, uint64_t piece_bytes,
                     hrx_staged_ready_fn_t ready, void* user_data) {
  hrx_staged_job_t job = {
      .dst = dst, .src = src, .length = length, .ready = ready,
      .user_data = user_data,
      .streaming = copier && copier->settings.streaming &&
                   length >= HRX_STAGED_COPY_STREAMING_MIN_BYTES};
  if (!piece_bytes && copier) {
    /* Every participant gets a piece or more. */
    uint64_t share = length / ((uint64_t)copier->settings.threads + 1);
    piece_bytes = HRX_STAGED_COPY_DRAIN_PIECE_BYTES;
    if (share < piece_bytes) piece_bytes = share;
    if (piece_bytes < HRX_STAGED_COPY_MIN_PIECE_BYTES) {
      piece_bytes = HRX_STAGED_COPY_MIN_PIECE_BYTES;
    }
  }
  job.piece_bytes = piece_bytes;
  job.pieces = piece_bytes ? (length + piece_bytes - 1) / piece_bytes : 0;
  if (!hrx_staged_copier_applies(copier, length) || job.pieces < 2 ||
      !(job.done = calloc(job.pieces, 1))) {
    hrx_host_copy(dst, src, length, job.streaming);
    if (ready) ready(user_data, length);
    return;
  }
  pthread_cond_init(&job.finished_cond, NULL);
  pthread_mutex_lock(&copier->mutex);
  hrx_staged_start_locked(copier);
  if (copier->tail) {
    copier->tail->next = &job;
  } else {
    copier->head = &job;
  }
  copier->tail = &job;
  pthread_cond_broadcast(&copier->work_cond);
  /* The caller works on its own copy until every piece is taken. */
  hrx_staged_job_t* taken = NULL;
  uint64_t piece = 0;
  while (hrx_staged_take_locked(copier, &job, &taken, &piece)) {
    pthread_mutex_unlock(&copier->mutex);
    hrx_staged_copy_piece(copier, &job, piece);
    pthread_mutex_lock(&copier->mutex);
  }
  while (job.finished < job.pieces) {
    pthread_cond_wait(&job.finished_cond, &copier->mutex);
  }
  pthread_mutex_unlock(&copier->mutex);
  pthread_cond_destroy(&job.finished_cond);
  free(job.done);
}
