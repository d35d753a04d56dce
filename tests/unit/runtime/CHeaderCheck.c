/*===- CHeaderCheck.c - kiln_runtime.h used from C -------------------------===//
 *
 * Compiled as C11 so the build fails if the C ABI header stops being C. The functions
 * below build launch arguments the way docs/runtime.md shows a C program doing it; the
 * C++ test calls them and compares the layout with what the C++ side sees.
 *
 *===----------------------------------------------------------------------===*/
#include "runtime/kiln_runtime.h"

#include <stddef.h>
#include <string.h>

/* Launches with a null kernel (refused before any driver is involved) and copies the
 * message out. Returns the status. */
int kiln_c_header_launch_null(char *message, size_t size) {
  kiln_arg args[3] = {
      {KILN_ARG_BUFFER, {.buffer = {NULL, 16}}},
      {KILN_ARG_INT, {.i = -5}},
      {KILN_ARG_FLOAT, {.f = 0.5}},
  };
  kiln_grid grid = {4, 1, 1};
  kiln_status s = kiln_launch(NULL, grid, args, 3);
  strncpy(message, kiln_last_error(), size - 1);
  message[size - 1] = '\0';
  return (int)s;
}

/* A block mask argument as a C program writes it, for the C++ side to read back. */
kiln_arg kiln_c_header_mask_arg(const kiln_block_mask *mask) {
  kiln_arg a = {KILN_ARG_BLOCK_MASK, {.mask = mask}};
  return a;
}

/* Builds a mask without a runtime (refused before any driver is involved) and copies the
 * message out. Returns the status. */
int kiln_c_header_mask_null_runtime(char *message, size_t size) {
  const uint8_t kept[4] = {1, 0, 0, 1};
  kiln_block_mask *mask = NULL;
  kiln_status s = kiln_block_mask_from_dense(NULL, kept, 2, 2, 2, 2, &mask);
  strncpy(message, kiln_last_error(), size - 1);
  message[size - 1] = '\0';
  kiln_block_mask_destroy(mask);
  return (int)s;
}

/* Sizes and offsets of the ABI structs as C lays them out. */
void kiln_c_header_layout(size_t out[6]) {
  out[0] = sizeof(kiln_arg);
  out[1] = offsetof(kiln_arg, value);
  out[2] = sizeof(kiln_grid);
  out[3] = sizeof(kiln_runtime_options);
  out[4] = sizeof(kiln_status);
  out[5] = sizeof(kiln_dtype);
}
