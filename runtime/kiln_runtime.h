/*===- kiln_runtime.h - C ABI of the Kiln runtime -----------------*- C -*-===//
 *
 * Loads compiled Kiln kernels (`.kbin` bundles) and launches them on a GPU through the
 * CUDA Driver API or Level Zero. Both drivers are resolved with dlopen at run time, so
 * a program linked against the runtime starts on any machine and reports "no CUDA
 * driver" / "no Level Zero driver" as ordinary errors.
 *
 * Conventions:
 *  - Every fallible call returns a kiln_status. On failure, kiln_last_error() returns a
 *    message for the calling thread that says what failed and why (driver error name,
 *    operation, kernel name and, where known, the Kiln source line).
 *  - Handles are opaque. Buffers, kernels and events keep their runtime alive, so they
 *    may be released in any order.
 *  - Launch arguments are checked against the kernel's signature from the bundle before
 *    anything reaches the driver: count, pointer vs scalar, buffer element dtype, that a
 *    scalar value fits the parameter's dtype without loss, and a block mask's block sizes.
 *
 * The C++ API in Runtime.h wraps this header; docs/runtime.md describes both.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change to the declarations below. */
#define KILN_RUNTIME_ABI_VERSION 1

/* Each enum ends in a *_MAX_ENUM entry that is not a valid value: it fixes the enum's
 * width at 32 bits, so any value from 0 to 0x7fffffff that names no entry (one from a
 * newer or careless caller) is an error the runtime reports rather than undefined
 * behaviour in the C++ code reading it. A negative value is outside every enum here. */

typedef enum kiln_status {
  KILN_SUCCESS = 0,
  KILN_ERROR_INVALID_VALUE = 1,      /* misuse of the API: null handle, size or offset out of range */
  KILN_ERROR_NO_DRIVER = 2,          /* the driver library is missing, is not a driver, or has no driver */
  KILN_ERROR_NO_DEVICE = 3,          /* a driver is present but offers no (such) device */
  KILN_ERROR_IO = 4,                 /* a file could not be read or written */
  KILN_ERROR_INVALID_BUNDLE = 5,     /* not a Kiln bundle, or a truncated/corrupt/unsupported one */
  KILN_ERROR_NO_COMPATIBLE_CODE = 6, /* the bundle has no code section this device can run */
  KILN_ERROR_MODULE_LOAD = 7,        /* the driver rejected the code (JIT/build log in the message) */
  KILN_ERROR_ARGUMENT_MISMATCH = 8,  /* launch arguments do not match the kernel's signature */
  KILN_ERROR_OUT_OF_MEMORY = 9,
  KILN_ERROR_LAUNCH = 10,            /* a launch was rejected or the kernel faulted */
  KILN_ERROR_DRIVER = 11,            /* any other driver failure */
  KILN_ERROR_UNSUPPORTED = 12,       /* valid request this backend cannot serve */
  KILN_ERROR_COMPILE = 13,           /* Kiln source has errors (the JIT, kiln_jit.h: the message is the located diagnostics) */
  /* a kernel compiled in checked mode accessed memory outside the buffer it was given;
   * the message names the kernel, the access, its line, program and element offset */
  KILN_ERROR_OUT_OF_BOUNDS = 14,
  KILN_STATUS_MAX_ENUM = 0x7fffffff  /* not a status: makes every enum here 32 bits wide */
} kiln_status;

typedef enum kiln_backend {
  KILN_BACKEND_AUTO = 0, /* CUDA if it works, else Level Zero, else an error saying why */
  KILN_BACKEND_CUDA = 1,
  KILN_BACKEND_LEVEL_ZERO = 2,
  KILN_BACKEND_MAX_ENUM = 0x7fffffff
} kiln_backend;

/* Element dtypes, in the order of ir/Type.h's KILN_DTYPES list (plus NONE = untyped). */
typedef enum kiln_dtype {
  KILN_DTYPE_NONE = 0,
  KILN_DTYPE_BOOL,
  KILN_DTYPE_I8,
  KILN_DTYPE_I16,
  KILN_DTYPE_I32,
  KILN_DTYPE_I64,
  KILN_DTYPE_U8,
  KILN_DTYPE_U16,
  KILN_DTYPE_U32,
  KILN_DTYPE_U64,
  KILN_DTYPE_F8E4M3,
  KILN_DTYPE_F8E5M2,
  KILN_DTYPE_F16,
  KILN_DTYPE_BF16,
  KILN_DTYPE_F32,
  KILN_DTYPE_F64,
  KILN_DTYPE_MAX_ENUM = 0x7fffffff
} kiln_dtype;

typedef struct kiln_runtime kiln_runtime;
typedef struct kiln_kernel kiln_kernel;
typedef struct kiln_buffer kiln_buffer;
typedef struct kiln_event kiln_event;
typedef struct kiln_recording kiln_recording;
typedef struct kiln_block_mask kiln_block_mask;
typedef struct kiln_graph kiln_graph;

typedef struct kiln_runtime_options {
  kiln_backend backend; /* KILN_BACKEND_AUTO by default */
  int device_index;     /* 0 by default */
} kiln_runtime_options;

typedef struct kiln_grid {
  uint32_t x, y, z; /* programs per axis; a launch with any axis 0 runs nothing */
} kiln_grid;

typedef enum kiln_arg_kind {
  KILN_ARG_BUFFER = 1, /* value.buffer: a device buffer (+ byte offset), for *T parameters */
  KILN_ARG_INT = 2,    /* value.i */
  KILN_ARG_UINT = 3,   /* value.u */
  KILN_ARG_FLOAT = 4,  /* value.f */
  KILN_ARG_BOOL = 5,   /* value.b (0 or 1) */
  /* value.mask: a block mask of this runtime, for a block_mask<BM, BN> parameter, in
   * place of the mask's five parameters (see kiln_launch) */
  KILN_ARG_BLOCK_MASK = 6,
  KILN_ARG_KIND_MAX_ENUM = 0x7fffffff
} kiln_arg_kind;

typedef struct kiln_arg {
  kiln_arg_kind kind;
  union {
    struct {
      const kiln_buffer *buffer;
      uint64_t offset; /* bytes from the start of the buffer */
    } buffer;
    int64_t i;
    uint64_t u;
    double f;
    int b;
    const kiln_block_mask *mask;
  } value;
} kiln_arg;

/* ---- errors ---------------------------------------------------------------------- */
/* "KILN_ERROR_NO_DRIVER" etc.; "KILN_STATUS_UNKNOWN" for a value outside the enum. */
const char *kiln_status_name(kiln_status status);
/* The message of the last failing call on this thread ("" if none failed yet). Valid
 * until the next failing call on this thread. */
const char *kiln_last_error(void);
/* Makes `message` this thread's last error and returns `status`: for libraries built on
 * the runtime (the JIT, kiln_jit.h) so their failures read like the runtime's own. */
kiln_status kiln_set_last_error(kiln_status status, const char *message);

/* ---- runtime --------------------------------------------------------------------- */
/* `options` may be NULL (auto backend, device 0). Environment overrides used mainly by
 * tests: KILN_CUDA_LIBRARY and KILN_ZE_LIBRARY name the driver library to dlopen. */
kiln_status kiln_runtime_create(const kiln_runtime_options *options, kiln_runtime **out);
void kiln_runtime_destroy(kiln_runtime *runtime);
/* Another handle to the same runtime (same device, buffers and kernels), destroyed on its
 * own with kiln_runtime_destroy; the device state lives until the last handle and object
 * using it are gone. Lets a library keep a runtime its caller may release first. */
kiln_status kiln_runtime_share(kiln_runtime *runtime, kiln_runtime **out);
kiln_backend kiln_runtime_backend(const kiln_runtime *runtime);
const char *kiln_runtime_device_name(const kiln_runtime *runtime);
/* The code target this device runs: "sm_80", "sm_90", "sm_90a", ... or "spirv64". */
const char *kiln_runtime_target(const kiln_runtime *runtime);
/* Waits until every launch and copy issued so far has finished. */
kiln_status kiln_runtime_synchronize(kiln_runtime *runtime);
/* CUDA: the stream (a CUstream: torch.cuda.current_stream().cuda_stream, say) that later
 * launches, event records and recording replays go on, so that they interleave with the
 * caller's work and are captured with it into the caller's CUDA graphs; NULL: the
 * runtime's own stream again. The caller keeps the stream alive while it is set.
 * Blocking copies wait for it only if it is a blocking stream: synchronize a
 * non-blocking one first. Refused while recording (KILN_ERROR_INVALID_VALUE), and on
 * Level Zero (KILN_ERROR_UNSUPPORTED). */
kiln_status kiln_runtime_set_stream(kiln_runtime *runtime, void *stream);

/* ---- device memory --------------------------------------------------------------- */
/* `element` may be KILN_DTYPE_NONE; a typed buffer is checked against *T parameters. */
kiln_status kiln_buffer_alloc(kiln_runtime *runtime, size_t bytes, kiln_dtype element, kiln_buffer **out);
void kiln_buffer_free(kiln_buffer *buffer);
/* A buffer over device memory the caller allocated and keeps owning (a torch tensor's,
 * cudaMalloc's, zeMemAllocDevice's): `bytes` from `device_address`, which must lie inside
 * one allocation the runtime's device can use (checked with the driver; otherwise
 * KILN_ERROR_INVALID_VALUE). It launches and copies like any buffer; kiln_buffer_free
 * releases the handle, never the memory, which must outlive every use of it. */
kiln_status kiln_buffer_wrap(kiln_runtime *runtime, uint64_t device_address, size_t bytes, kiln_dtype element,
                             kiln_buffer **out);
size_t kiln_buffer_size(const kiln_buffer *buffer);
kiln_dtype kiln_buffer_dtype(const kiln_buffer *buffer);
/* The raw device address (CUdeviceptr, or the Level Zero pointer), for interop. */
uint64_t kiln_buffer_device_address(const kiln_buffer *buffer);
/* Address, size and dtype of `buffer` if it is a live buffer of `runtime`; otherwise
 * KILN_ERROR_INVALID_VALUE, without touching the handle (it may have been freed). For
 * libraries that inspect launch arguments before launching them. Out pointers may be NULL. */
kiln_status kiln_buffer_query(const kiln_runtime *runtime, const kiln_buffer *buffer, uint64_t *address, size_t *size,
                              kiln_dtype *dtype);
/* Blocking copies; they are ordered after every launch issued before them. */
kiln_status kiln_buffer_write(kiln_buffer *buffer, size_t offset, const void *src, size_t bytes);
kiln_status kiln_buffer_read(const kiln_buffer *buffer, size_t offset, void *dst, size_t bytes);
kiln_status kiln_buffer_fill(kiln_buffer *buffer, uint8_t byte);
/* Copies `bytes` from `src` at `src_offset` to `dst` at `dst_offset` on the device, both
 * buffers of one runtime; blocking like the copies above. The ranges may not overlap
 * unless they are the same. */
kiln_status kiln_buffer_copy(kiln_buffer *dst, size_t dst_offset, const kiln_buffer *src, size_t src_offset,
                             size_t bytes);

/* ---- kernels --------------------------------------------------------------------- */
kiln_status kiln_kernel_load_file(kiln_runtime *runtime, const char *path, kiln_kernel **out);
kiln_status kiln_kernel_load_memory(kiln_runtime *runtime, const void *data, size_t size, kiln_kernel **out);
void kiln_kernel_destroy(kiln_kernel *kernel);
const char *kiln_kernel_name(const kiln_kernel *kernel);
/* The kernel's runtime parameters as the bundle lists them: a block_mask parameter is
 * five of them, "NAME.rows" (i32), "NAME.cols" (i32), "NAME.row_start" (*i32),
 * "NAME.blocks" (*i32) and "NAME.bitmaps" (*u32); kiln_kernel_block_mask says where. */
size_t kiln_kernel_num_params(const kiln_kernel *kernel);
/* Any of the out pointers may be NULL. */
kiln_status kiln_kernel_param(const kiln_kernel *kernel, size_t index, const char **name, kiln_dtype *dtype,
                              int *is_pointer);
/* The kernel's block_mask<BM, BN> parameters, in signature order: the mask's name, BM,
 * BN, and the index of its first (NAME.rows) parameter among kiln_kernel_param's. The
 * name is valid while the kernel lives. Out pointers may be NULL. */
size_t kiln_kernel_num_block_masks(const kiln_kernel *kernel);
kiln_status kiln_kernel_block_mask(const kiln_kernel *kernel, size_t index, const char **name, int64_t *block_rows,
                                   int64_t *block_cols, size_t *first_param);
/* Threads (CUDA) or work-items (Level Zero) per program: num_warps * 32. */
uint32_t kiln_kernel_block_size(const kiln_kernel *kernel);
uint32_t kiln_kernel_shared_bytes(const kiln_kernel *kernel);
/* How many programs of `kernel` the device runs at once: its occupancy per
 * multiprocessor times their count (the grid of a persistent kernel).
 * KILN_ERROR_UNSUPPORTED where the backend cannot tell (Level Zero). */
kiln_status kiln_kernel_resident_programs(const kiln_kernel *kernel, uint32_t *programs);
/* The driver's JIT/build info log from loading (may be ""). */
const char *kiln_kernel_jit_log(const kiln_kernel *kernel);
/* The kernel's `const` parameters, with the values they were compiled with (a default,
 * a -D, a JIT define or an @autotune config's). A host program reads them to size its
 * launch: BLOCK elements per program need cdiv(n, BLOCK) programs. Values come back as
 * a kiln_arg of kind KILN_ARG_INT, KILN_ARG_FLOAT or KILN_ARG_BOOL, the kinds a scalar
 * argument has; the name is valid while the kernel lives. Out pointers may be NULL. */
size_t kiln_kernel_num_consts(const kiln_kernel *kernel);
kiln_status kiln_kernel_const(const kiln_kernel *kernel, size_t index, const char **name, kiln_arg *value);
/* The integer `const` called `name`. KILN_ERROR_INVALID_VALUE, with a message naming
 * the kernel and the const, when there is no such const or it is a float or a bool. */
kiln_status kiln_kernel_const_int(const kiln_kernel *kernel, const char *name, int64_t *value);

/* Launches `grid` programs. `args` follow the kernel's parameters in order. A
 * block_mask parameter takes either one KILN_ARG_BLOCK_MASK argument, whose five parts
 * the runtime passes, or its five parts as five ordinary arguments; each mask of a launch
 * chooses on its own. A mask argument that is NULL, destroyed, of another runtime, or
 * cut into blocks of another size than the parameter's fails with
 * KILN_ERROR_INVALID_VALUE; every other mismatch with KILN_ERROR_ARGUMENT_MISMATCH. */
kiln_status kiln_launch(kiln_kernel *kernel, kiln_grid grid, const kiln_arg *args, size_t num_args);
/* kiln_launch on `stream` (CUDA: a CUstream; NULL: the runtime's own) for this launch
 * alone, whatever kiln_runtime_set_stream set. */
kiln_status kiln_launch_on_stream(kiln_kernel *kernel, kiln_grid grid, const kiln_arg *args, size_t num_args,
                                  void *stream);

/* ---- block masks ----------------------------------------------------------------- */
/* A block-sparse mask for block_mask<BM, BN> parameters: a [rows, cols] grid of elements
 * cut into block_rows x block_cols blocks, each empty, full or partial, stored on the
 * device in the layout of support/BlockMask.h. Built on the host and uploaded once; it
 * may be passed to any number of launches of kernels of its runtime, and keeps the
 * runtime alive like a buffer does. Builders return KILN_ERROR_INVALID_VALUE, with a
 * message naming what is wrong, for extents outside 1 .. 2^30, block sizes that are not
 * powers of two from 1 to 256, or malformed input. */

/* From a dense row-major [rows, cols] array of element flags, one byte each (nonzero =
 * kept). */
kiln_status kiln_block_mask_from_dense(kiln_runtime *runtime, const uint8_t *kept, int64_t rows, int64_t cols,
                                       int64_t block_rows, int64_t block_cols, kiln_block_mask **out);
/* From BSR (block compressed sparse row) arrays: `row_ptr`, ceil(rows / block_rows) + 1
 * non-decreasing offsets from 0 to `num_blocks`; `col_indices`, the column block of each
 * listed block, strictly ascending within a block row; `block_data`, NULL (every listed
 * block is kept whole, cut at the grid's edge) or num_blocks row-major block_rows x
 * block_cols arrays of element flags (a listed block that keeps nothing is dropped). */
kiln_status kiln_block_mask_from_bsr(kiln_runtime *runtime, const int64_t *row_ptr, size_t row_ptr_len,
                                     const int64_t *col_indices, size_t num_blocks, const uint8_t *block_data,
                                     int64_t rows, int64_t cols, int64_t block_rows, int64_t block_cols,
                                     kiln_block_mask **out);
/* From the three arrays already on the device, in the layout of support/BlockMask.h:
 * what the passes of stdlib/block_mask_build.kiln build from an element predicate
 * (docs/sparsity.md). The block level (row_start, then the entries it counts) is read
 * back and checked as the builders check theirs: offsets from 0 that never decrease,
 * columns inside the grid and ascending within a row, slots inside `bitmaps`; the
 * failure names the first offending entry. The mask holds copies of the arrays: the
 * caller's buffers stay the caller's. */
kiln_status kiln_block_mask_from_buffers(kiln_runtime *runtime, int64_t rows, int64_t cols, int64_t block_rows,
                                         int64_t block_cols, const kiln_buffer *row_start, const kiln_buffer *blocks,
                                         const kiln_buffer *bitmaps, kiln_block_mask **out);
void kiln_block_mask_destroy(kiln_block_mask *mask);
/* The element extents and block sizes. Out pointers may be NULL. */
kiln_status kiln_block_mask_shape(const kiln_block_mask *mask, int64_t *rows, int64_t *cols, int64_t *block_rows,
                                  int64_t *block_cols);
/* The extents, block sizes and three device arrays (row_start, blocks, bitmaps) of
 * `mask` if it is a live mask of `runtime`; otherwise KILN_ERROR_INVALID_VALUE, without
 * touching the handle (it may have been destroyed). For libraries that inspect launch
 * arguments before launching them, like kiln_buffer_query. Out pointers may be NULL. */
kiln_status kiln_block_mask_query(const kiln_runtime *runtime, const kiln_block_mask *mask, int64_t *rows,
                                  int64_t *cols, int64_t *block_rows, int64_t *block_cols,
                                  const kiln_buffer **row_start, const kiln_buffer **blocks,
                                  const kiln_buffer **bitmaps);
/* A stable digest of the mask's content (extents, block sizes and its three arrays), as
 * 16 lowercase hex digits, valid while the mask lives; "" for NULL. Masks built from the
 * same pattern by any builder share it: the JIT keys tuning results by it. */
const char *kiln_block_mask_digest(const kiln_block_mask *mask);
/* How many blocks of the grid are full, partial and empty (a block reaching past the
 * grid's edge is never full). Out pointers may be NULL. */
kiln_status kiln_block_mask_counts(const kiln_block_mask *mask, int64_t *full, int64_t *partial, int64_t *empty);

/* ---- events (device-side timing) ------------------------------------------------- */
kiln_status kiln_event_create(kiln_runtime *runtime, kiln_event **out);
void kiln_event_destroy(kiln_event *event);
kiln_status kiln_event_record(kiln_event *event);
kiln_status kiln_event_synchronize(kiln_event *event);
/* Milliseconds of device time between two recorded events of one runtime. */
kiln_status kiln_event_elapsed_ms(const kiln_event *start, const kiln_event *end, float *ms);

/* Recordings (a CUDA graph): between kiln_runtime_begin_recording and
 * kiln_runtime_end_recording, kiln_launch records its launches instead of running
 * them; kiln_recording_replay runs them all again, in order, with one call. Only
 * launches may happen while recording (buffer copies and synchronization fail).
 * KILN_ERROR_UNSUPPORTED on Level Zero. */
kiln_status kiln_runtime_begin_recording(kiln_runtime *runtime);
kiln_status kiln_runtime_end_recording(kiln_runtime *runtime, kiln_recording **out);
kiln_status kiln_recording_replay(kiln_recording *recording);
void kiln_recording_destroy(kiln_recording *recording);

/* ---- graphs ---------------------------------------------------------------------- */
/* A graph bundle (.kgraph, from `dslc --emit=bundle --kernel GRAPH`): a graph of kernel
 * launches, run with one call on the graph's own arguments. The graph computes its
 * launches' grids and arguments from them (docs/graphs.md). */
typedef enum kiln_graph_mode {
  /* one persistent kernel where the bundle has one and the device is CUDA, else the
   * launches one by one */
  KILN_GRAPH_MODE_AUTO = 0,
  /* one kernel whose workers, one per program the device holds at once, run the
   * launches' programs as tasks, each once the launch it depends on is done */
  KILN_GRAPH_MODE_PERSISTENT = 1,
  /* the launches recorded once as a CUDA graph (again when the arguments change) and
   * replayed */
  KILN_GRAPH_MODE_CUDA_GRAPH = 2,
  /* the launches one after another: what Level Zero gets */
  KILN_GRAPH_MODE_LAUNCHES = 3,
  KILN_GRAPH_MODE_MAX_ENUM = 0x7fffffff
} kiln_graph_mode;

/* Reads and checks a graph bundle and loads its kernels for `runtime`'s device;
 * KILN_ERROR_INVALID_BUNDLE for a file that is not a usable graph bundle. */
kiln_status kiln_graph_load_file(kiln_runtime *runtime, const char *path, kiln_graph **out);
kiln_status kiln_graph_load_memory(kiln_runtime *runtime, const void *data, size_t size, kiln_graph **out);
void kiln_graph_destroy(kiln_graph *graph);
const char *kiln_graph_name(const kiln_graph *graph);
size_t kiln_graph_num_params(const kiln_graph *graph);
/* Parameter `index` of the graph, as kiln_kernel_param. Out pointers may be NULL. */
kiln_status kiln_graph_param(const kiln_graph *graph, size_t index, const char **name, kiln_dtype *dtype,
                             int *is_pointer);
/* The graph's block_mask<BM, BN> parameters, as kiln_kernel_block_mask: each is one
 * KILN_ARG_BLOCK_MASK argument of kiln_graph_launch (or its five parts). */
size_t kiln_graph_num_block_masks(const kiln_graph *graph);
kiln_status kiln_graph_block_mask(const kiln_graph *graph, size_t index, const char **name, int64_t *block_rows,
                                  int64_t *block_cols, size_t *first_param);
/* 1 when the bundle holds a persistent kernel (NVPTX targets), else 0. */
int kiln_graph_has_persistent(const kiln_graph *graph);
/* The persistent mode's workers: 0 (the default) for as many programs as the device
 * holds at once. */
kiln_status kiln_graph_set_workers(kiln_graph *graph, uint32_t workers);
/* How long a persistent kernel's task may wait for the launch it depends on before the
 * kernel stops with an error (default 10 s). */
kiln_status kiln_graph_set_wait_timeout(kiln_graph *graph, uint64_t nanoseconds);
/* Records each task's worker and GPU timestamps in the persistent mode (kiln_graph_trace). */
kiln_status kiln_graph_set_trace(kiln_graph *graph, int enabled);

/* Enqueues one run of the graph with its arguments (one per parameter: buffers for
 * pointers, scalars and block masks as for kiln_launch). Every launch's grid and
 * arguments are checked before anything is enqueued. Asynchronous like kiln_launch:
 * after kiln_runtime_synchronize, kiln_graph_check says whether a persistent run
 * finished. Repeated runs need no reset between them. */
kiln_status kiln_graph_launch(kiln_graph *graph, const kiln_arg *args, size_t num_args, kiln_graph_mode mode);
/* After the runtime synchronized: KILN_ERROR_LAUNCH, naming the task and the launch it
 * waited for, when the last persistent run stopped on its watchdog (and the graph's
 * counters start again from zero); KILN_SUCCESS otherwise. */
kiln_status kiln_graph_check(kiln_graph *graph);
/* What the last run was: its mode (never AUTO), launches, tasks (programs of all its
 * launches) and, for the persistent mode, workers. Out pointers may be NULL. */
kiln_status kiln_graph_last_run(const kiln_graph *graph, kiln_graph_mode *mode, uint32_t *launches, uint64_t *tasks,
                                uint32_t *workers);
/* The last persistent run's trace, with kiln_graph_set_trace on: 4 words per task in
 * task order (claim, start and end times in ns of the GPU clock; the worker in the low
 * 32 bits and the SM in the high 32 bits). `count` words at most are read; `*words_out`
 * (may be NULL) gets how many the trace has. */
kiln_status kiln_graph_trace(kiln_graph *graph, uint64_t *words, size_t count, size_t *words_out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_H */
