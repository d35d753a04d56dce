/*===- kiln_jit.h - C ABI of the Kiln JIT ---------------------------*- C -*-===//
 *
 * Compiles Kiln source at run time for the device of a kiln_runtime and launches it.
 * Compiled kernels are kept in a disk cache, so the second run of a program skips code
 * generation; @autotune kernels are timed on their first launch per key value and the
 * choice is cached too. docs/jit.md describes the cache, the key and the tuning.
 *
 * Conventions are those of kiln_runtime.h: every fallible call returns a kiln_status and
 * kiln_last_error() says why. A Kiln program with errors gives KILN_ERROR_COMPILE and the
 * compiler's diagnostics as the message ("softmax.kiln:7:13: error[E0200]: ..." with the
 * source line and a caret). Handles keep what they need alive, so they may be released
 * in any order; calls on one kiln_jit are serialized, so handles may be shared by threads.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_JIT_H
#define KILN_JIT_H

#include "runtime/kiln_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change to the declarations below. */
#define KILN_JIT_ABI_VERSION 1

typedef struct kiln_jit kiln_jit;
typedef struct kiln_jit_kernel kiln_jit_kernel;

typedef enum kiln_jit_severity {
  KILN_JIT_NOTE = 0,    /* worth knowing: a damaged cache entry was rebuilt, a config was tuned */
  KILN_JIT_WARNING = 1, /* something degraded: the cache cannot be written, tuning was skipped */
  KILN_JIT_SEVERITY_MAX_ENUM = 0x7fffffff
} kiln_jit_severity;

/* Receives the JIT's notes and warnings (one line each, no trailing newline). */
typedef void (*kiln_jit_log_fn)(void *user_data, kiln_jit_severity severity, const char *message);

typedef struct kiln_jit_options {
  /* Where compiled kernels and tuning choices are kept. NULL: the environment decides
   * ($KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln; KILN_CACHE_DIR
   * set to the empty string turns the disk cache off). "": no disk cache. */
  const char *cache_dir;
  /* Nonzero: specialize each launch on facts of its arguments (16-byte aligned pointers,
   * integers that are multiples of 16), compiling a variant per combination seen, as
   * Triton does. Zero: one variant, compiled by kiln_jit_compile_*, that assumes
   * aligned pointers only (what dslc emits). */
  int specialize;
  int opt_level;            /* LLVM optimization level, 0..3 */
  uint32_t autotune_warmup; /* launches of each config before it is timed */
  uint32_t autotune_runs;   /* timed launches of each config; their median counts */
  kiln_jit_log_fn log;      /* NULL: notes and warnings go to stderr as "kiln: note: ..." */
  void *log_user_data;
  /* Nonzero: checked mode (docs/checked.md): every load, store and atomic of the kernels
   * compiled is bounds-checked against the buffer passed for its pointer, and a bad
   * access is reported by kiln_runtime_synchronize as KILN_ERROR_OUT_OF_BOUNDS. */
  int checked;
} kiln_jit_options;

/* The defaults: cache from the environment, specialize on, -O3, 2 warm-up and 5 timed
 * launches per config, log to stderr, not checked. */
void kiln_jit_options_init(kiln_jit_options *options);

/* A `const` parameter value, written as dslc's -D NAME=VALUE takes it: "1024", "0.5",
 * "true". */
typedef struct kiln_define {
  const char *name;
  const char *value;
} kiln_define;

typedef struct kiln_compile_options {
  const kiln_define *defines;
  size_t num_defines;
  const char *const *include_dirs; /* searched for imports after the importing file's folder */
  size_t num_include_dirs;
  uint32_t num_warps; /* 0: the kernel's @num_warps (4 without one); an @autotune config's wins */
  /* Reduction chains split over programs (dslc's --reduction-split): 0 lets the cost
   * model decide, which keeps one program per chain since the grid is not known when
   * the JIT compiles; S in 1..1024 splits every chain where the split applies over S
   * programs (1: never). */
  uint32_t reduction_split;
  /* Nonzero: also fuse reductions through a rounding to f16 or f8 (dslc's
   * --fuse-quantized: dynamic-scale quantization inside a GEMM, results differ from the
   * program as written within the format's precision). */
  uint32_t fuse_quantized;
} kiln_compile_options;

/* ---- the JIT --------------------------------------------------------------------- */
/* Compiles for `runtime`'s device; the JIT keeps its own handle to the runtime
 * (kiln_runtime_share). `options` may be NULL (the defaults). */
kiln_status kiln_jit_create(kiln_runtime *runtime, const kiln_jit_options *options, kiln_jit **out);
void kiln_jit_destroy(kiln_jit *jit);
/* The disk cache directory in use; "" when there is none. */
const char *kiln_jit_cache_dir(const kiln_jit *jit);

/* ---- compiling ------------------------------------------------------------------- */
/* Compiles kernel `kernel` of the Kiln file at `path` (with its imports). Source errors
 * come back as KILN_ERROR_COMPILE. `options` may be NULL. */
kiln_status kiln_jit_compile_file(kiln_jit *jit, const char *path, const char *kernel,
                                  const kiln_compile_options *options, kiln_jit_kernel **out);
/* The same from source text; `source_name` names it in diagnostics ("<string>" when
 * NULL) and imports are looked up from the current directory and the include dirs. */
kiln_status kiln_jit_compile_string(kiln_jit *jit, const char *source, const char *source_name, const char *kernel,
                                    const kiln_compile_options *options, kiln_jit_kernel **out);
void kiln_jit_kernel_destroy(kiln_jit_kernel *kernel);

/* Compiles graph `graph` of the Kiln file at `path` (docs/graphs.md) with every kernel
 * it launches, into what `dslc --emit=bundle --kernel GRAPH` writes (the persistent
 * kernel included on CUDA), cached on disk as kernels are, and loads it for the JIT's
 * runtime: run it with kiln_graph_launch in any mode, release it with
 * kiln_graph_destroy (it keeps its runtime alive, not the JIT). The whole graph compiles
 * here, so source and code-generation errors come back from this call. `options` may be
 * NULL; its defines set the graph's `const` parameters, num_warps must be 0 (each kernel
 * keeps its own; the persistent kernel runs them all with the largest), and
 * reduction_split 0 keeps each reduction in one program, as a task is one program. */
kiln_status kiln_jit_compile_graph_file(kiln_jit *jit, const char *path, const char *graph,
                                        const kiln_compile_options *options, kiln_graph **out);
/* The same from source text, named in diagnostics as kiln_jit_compile_string's is. */
kiln_status kiln_jit_compile_graph_string(kiln_jit *jit, const char *source, const char *source_name,
                                          const char *graph, const kiln_compile_options *options, kiln_graph **out);

/* The signature (runtime parameters only: `const` ones are compiled in). */
const char *kiln_jit_kernel_name(const kiln_jit_kernel *kernel);
size_t kiln_jit_kernel_num_params(const kiln_jit_kernel *kernel);
kiln_status kiln_jit_kernel_param(const kiln_jit_kernel *kernel, size_t index, const char **name, kiln_dtype *dtype,
                                  int *is_pointer);
/* @autotune configs: how many (1 for a kernel without @autotune) and each one's text,
 * "{BLOCK: 64, num_warps: 4}" ("{}" for the kernel as written). */
size_t kiln_jit_kernel_num_configs(const kiln_jit_kernel *kernel);
const char *kiln_jit_kernel_config(const kiln_jit_kernel *kernel, size_t index);

/* ---- launching ------------------------------------------------------------------- */
/* Checks `args` against the signature, picks the variant for them (compiling it, or on
 * the first launch of an @autotune kernel per key value, timing every config on copies
 * of the argument buffers' contents, which are restored), and launches it. */
kiln_status kiln_jit_launch(kiln_jit_kernel *kernel, kiln_grid grid, const kiln_arg *args, size_t num_args);
/* kiln_jit_launch on `stream` (CUDA: a CUstream; NULL: the runtime's own) for this launch
 * alone, whatever kiln_runtime_set_stream set (kiln_launch_on_stream). An @autotune
 * kernel's first launch per key value still times its configs on the runtime's stream,
 * waiting for them, before the launch. */
kiln_status kiln_jit_launch_on_stream(kiln_jit_kernel *kernel, kiln_grid grid, const kiln_arg *args, size_t num_args,
                                      void *stream);
/* What kiln_jit_launch would launch for `grid` and `args`, without launching it (an
 * @autotune kernel may be timed, as on a launch): the loaded kernel (owned by `kernel`,
 * valid while it lives) and the index of its config. Either out pointer may be NULL. */
kiln_status kiln_jit_kernel_select(kiln_jit_kernel *kernel, kiln_grid grid, const kiln_arg *args, size_t num_args,
                                   kiln_kernel **selected, size_t *config_index);

/* ---- launching with a grid function --------------------------------------------- */
/* The grid of a launch, computed from the config that runs: `config` is that config's
 * loaded kernel, whose consts (kiln_kernel_const_int(config, "BLOCK", &block)) say how
 * much of the problem one program covers, so the grid can be cdiv(n, BLOCK) for every
 * config of an @autotune kernel, as Triton's `grid = lambda META: ...` is. Stores the
 * grid in *grid and returns KILN_SUCCESS, or returns a failure status, which the launch
 * returns; a message set with kiln_set_last_error() is kept in the launch's. It may call
 * the runtime's accessors but must not launch through the same kiln_jit (calls on one
 * kiln_jit are serialized, so that would wait forever). */
typedef kiln_status (*kiln_jit_grid_fn)(void *user_data, const kiln_kernel *config, kiln_grid *grid);

/* kiln_jit_launch with the grid computed by `grid_fn` for the config that runs. On the
 * first launch of an @autotune kernel per key value it is called once for each config
 * timed, then for the chosen one; otherwise once. When it fails, nothing more runs, the
 * argument buffers hold what they held before the call, and no tuning choice is kept. */
kiln_status kiln_jit_launch_with_grid_fn(kiln_jit_kernel *kernel, kiln_jit_grid_fn grid_fn, void *user_data,
                                         const kiln_arg *args, size_t num_args);
/* kiln_jit_kernel_select with the grid from `grid_fn`; `grid` receives the grid the
 * launch would use. Any of the out pointers may be NULL. */
kiln_status kiln_jit_kernel_select_with_grid_fn(kiln_jit_kernel *kernel, kiln_jit_grid_fn grid_fn, void *user_data,
                                                const kiln_arg *args, size_t num_args, kiln_kernel **selected,
                                                size_t *config_index, kiln_grid *grid);

/* ---- choosing between ways to compute one result ------------------------------ */
/* Runs candidate `index` once: the launches of one way to compute the result (they need
 * not be waited for). Returns KILN_SUCCESS, or a failure status (a message set with
 * kiln_set_last_error() is kept), which skips the candidate. It may launch through the
 * same kiln_jit. */
typedef kiln_status (*kiln_jit_candidate_fn)(void *user_data, size_t index);

/* The first stage of a two-stage search: which of `num_candidates` ways to compute one
 * result (named `candidates`, run by `run`) is fastest on this device, for `key` (what
 * the answer depends on: the shapes, a mask's kiln_block_mask_digest). The first call per
 * key runs every candidate untimed (their kernels compile and autotune: the second
 * stage), then times it with events, and keeps the fastest in memory and in the disk
 * cache under `search`, the candidates' names, `key`, the device and the compiler build;
 * a later call with the same key runs nothing (a choice made while some candidate failed
 * is kept for this kiln_jit only). The buffers among `preserve` are restored
 * after the runs, so candidates may update them in place. A note reports the times and
 * how long the search took. Stores the chosen index in *chosen. Fails when `search` is
 * empty, a name is empty or repeated, or no candidate runs (each one's reason listed). */
kiln_status kiln_jit_choose(kiln_jit *jit, const char *search, const char *key, const char *const *candidates,
                            size_t num_candidates, kiln_jit_candidate_fn run, void *user_data,
                            const kiln_arg *preserve, size_t num_preserve, size_t *chosen);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_JIT_H */
