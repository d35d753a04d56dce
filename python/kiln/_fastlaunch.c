/* kiln._fastlaunch: kernel[grid](*args) in C.
 *
 * A launch from Python through ctypes spends most of its time in Python, not in the driver:
 * per argument a type test and a few attribute reads, the kiln_arg array packed with
 * struct, a ctypes call that converts five arguments (one a structure by value). A Launcher
 * does the same work in C for the arguments it knows at sight -- a kiln Buffer, a torch
 * tensor seen before (same address, size and dtype), a Python int, float or bool -- and calls
 * the C API's launch entry point through its address with the GIL released. Everything
 * else goes back to Python: an argument of another kind to the parameter's converter (kiln/
 * _launch.py), and a wrong count, an unknown keyword or an argument no converter takes to
 * the kernel's general launch, which accepts every kind and names what it refuses. So the
 * Launcher changes how fast a launch is, never what it accepts or how it fails.
 *
 * It uses the stable ABI (Py_LIMITED_API 3.9) and links nothing: one build loads on every
 * CPython from 3.9 on, and the C API is reached through the addresses ctypes found, so the
 * extension never names the library it calls. The kiln_arg and kiln_grid layouts below are
 * the C ABI of runtime/kiln_runtime.h, which is stable; the sizes are checked.
 */
#define Py_LIMITED_API 0x03090000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
  uint32_t x, y, z;
} kiln_grid_abi;

typedef struct {
  int32_t kind;
  union {
    struct {
      void *buffer;
      uint64_t offset;
    } buffer;
    int64_t i;
    double f;
    int32_t b;
  } value;
} kiln_arg_abi;

_Static_assert(sizeof(kiln_grid_abi) == 12, "kiln_grid is three uint32_t");
_Static_assert(sizeof(kiln_arg_abi) == 24 && offsetof(kiln_arg_abi, value) == 8,
               "kiln_arg is a 4-byte kind and a 16-byte union at offset 8");

typedef int32_t (*launch_fn)(void *kernel, kiln_grid_abi grid, const kiln_arg_abi *args, size_t count);
typedef int32_t (*launch_on_fn)(void *kernel, kiln_grid_abi grid, const kiln_arg_abi *args, size_t count,
                                void *stream);

/* How a parameter's argument becomes its kiln_arg (kiln/_launch.py names them). */
enum { SLOT_POINTER, SLOT_INT, SLOT_F32, SLOT_F64, SLOT_BOOL };
enum { MAX_PARAMS = 64 };
enum { KIND_BUFFER = 1, KIND_INT = 2, KIND_FLOAT = 4, KIND_BOOL = 5 };

typedef struct {
  PyObject_HEAD
  launch_fn launch;
  launch_on_fn launch_on;
  void *kernel;
  kiln_grid_abi grid;
  Py_ssize_t count;
  unsigned char slots[MAX_PARAMS];
  PyObject *converters;    /* tuple: per parameter, argument -> slot value (raises slow) */
  PyObject *tensor_dtypes; /* tuple: per parameter, the torch dtype taken inline, or None */
  PyObject *buffer_type;   /* kiln.runtime.Buffer */
  PyObject *tensor_type;   /* torch.Tensor, or None without torch */
  PyObject *wraps;         /* dict: (address, nbytes, dtype) -> Buffer (Runtime._wraps) */
  PyObject *slow;          /* the exception a converter raises for the general path */
  PyObject *stream_getter; /* torch's raw stream of a device index, or None */
  PyObject *device;        /* the runtime's device index */
  PyObject *current;       /* () -> the stream to launch on, or None for the runtime's */
  PyObject *explicit_;     /* stream= -> a CUstream as an int */
  PyObject *general;       /* (*args, stream=None): the general launch */
  PyObject *fail;          /* (status): raises kiln.Error */
} Launcher;

static PyObject *s_handle, *s_dtype, *s_is_contiguous, *s_data_ptr, *s_nbytes, *s_stream;

/* An int (or None, a null handle) as a pointer; -1 with an exception set otherwise. */
static int as_pointer(PyObject *value, void **out) {
  if (value == Py_None) {
    *out = NULL;
    return 0;
  }
  *out = PyLong_AsVoidPtr(value);
  return (*out == NULL && PyErr_Occurred()) ? -1 : 0;
}

/* The parameter's Python converter for `arg`: 1 with the result in *out, 0 when it raised
 * the slow exception (the general path takes the launch), -1 on another error. */
static int convert_in_python(Launcher *self, Py_ssize_t i, PyObject *arg, PyObject **out) {
  *out = PyObject_CallFunctionObjArgs(PyTuple_GetItem(self->converters, i), arg, NULL);
  if (*out)
    return 1;
  if (PyErr_ExceptionMatches(self->slow)) {
    PyErr_Clear();
    return 0;
  }
  return -1;
}

/* A Buffer's handle into `slot`. */
static int buffer_handle(PyObject *buffer, kiln_arg_abi *slot) {
  PyObject *handle = PyObject_GetAttr(buffer, s_handle);
  if (!handle)
    return -1;
  int failed = as_pointer(handle, &slot->value.buffer.buffer);
  Py_DECREF(handle);
  return failed ? -1 : 1;
}

/* A torch tensor of the parameter's dtype, contiguous and wrapped before: 1 with its
 * Buffer's handle in `slot`, 0 when it is anything else (the converter decides). */
static int tensor_seen_before(Launcher *self, Py_ssize_t i, PyObject *arg, kiln_arg_abi *slot) {
  PyObject *want = PyTuple_GetItem(self->tensor_dtypes, i);
  if (want == Py_None)
    return 0;
  PyObject *dtype = PyObject_GetAttr(arg, s_dtype);
  if (!dtype)
    return -1;
  Py_DECREF(dtype); /* compared by identity: torch's dtypes are singletons */
  if (dtype != want)
    return 0;
  PyObject *contiguous = PyObject_CallMethodObjArgs(arg, s_is_contiguous, NULL);
  if (!contiguous)
    return -1;
  Py_DECREF(contiguous);
  if (contiguous != Py_True)
    return 0;
  PyObject *address = PyObject_CallMethodObjArgs(arg, s_data_ptr, NULL);
  if (!address)
    return -1;
  PyObject *nbytes = PyObject_GetAttr(arg, s_nbytes);
  if (!nbytes) {
    Py_DECREF(address);
    return -1;
  }
  PyObject *key = PyTuple_Pack(3, address, nbytes, want);
  Py_DECREF(address);
  Py_DECREF(nbytes);
  if (!key)
    return -1;
  PyObject *buffer = PyDict_GetItemWithError(self->wraps, key); /* borrowed */
  Py_DECREF(key);
  if (!buffer)
    return PyErr_Occurred() ? -1 : 0;
  return buffer_handle(buffer, slot);
}

/* Fills `slot` for argument i: 1 done, 0 the general path takes the launch, -1 error. */
static int convert(Launcher *self, Py_ssize_t i, PyObject *arg, kiln_arg_abi *slot) {
  PyObject *value = NULL;
  int found;
  switch (self->slots[i]) {
  case SLOT_POINTER:
    slot->kind = KIND_BUFFER;
    if ((PyObject *)Py_TYPE(arg) == self->buffer_type)
      return buffer_handle(arg, slot);
    if ((PyObject *)Py_TYPE(arg) == self->tensor_type) {
      found = tensor_seen_before(self, i, arg, slot);
      if (found)
        return found;
    }
    if ((found = convert_in_python(self, i, arg, &value)) <= 0)
      return found;
    found = as_pointer(value, &slot->value.buffer.buffer) ? -1 : 1;
    break;
  case SLOT_INT:
    slot->kind = KIND_INT;
    if (!PyLong_CheckExact(arg)) { /* a bool too: the converter sends it the general way */
      if ((found = convert_in_python(self, i, arg, &value)) <= 0)
        return found;
      arg = value;
    }
    slot->value.i = PyLong_AsLongLong(arg);
    found = 1;
    if (slot->value.i == -1 && PyErr_Occurred()) {
      if (!PyErr_ExceptionMatches(PyExc_OverflowError))
        found = -1;
      else { /* out of range: the general path names the parameter and its type */
        PyErr_Clear();
        found = 0;
      }
    }
    break;
  case SLOT_F32:
  case SLOT_F64:
    slot->kind = KIND_FLOAT;
    if (PyFloat_CheckExact(arg)) {
      double d = PyFloat_AsDouble(arg);
      if (self->slots[i] == SLOT_F64)
        slot->value.f = d;
      else if (isinf((float)d) && !isinf(d))
        goto python_float; /* overflows f32: as the converter rounds it */
      else
        slot->value.f = (double)(float)d;
      return 1;
    }
  python_float:
    if ((found = convert_in_python(self, i, arg, &value)) <= 0)
      return found;
    slot->value.f = PyFloat_AsDouble(value);
    found = (slot->value.f == -1.0 && PyErr_Occurred()) ? -1 : 1;
    break;
  default: /* SLOT_BOOL */
    slot->kind = KIND_BOOL;
    if (arg == Py_True || arg == Py_False) {
      slot->value.b = arg == Py_True;
      return 1;
    }
    if ((found = convert_in_python(self, i, arg, &value)) <= 0)
      return found;
    slot->value.b = (int32_t)PyLong_AsLong(value);
    found = (slot->value.b == -1 && PyErr_Occurred()) ? -1 : 1;
    break;
  }
  Py_XDECREF(value);
  return found;
}

/* The CUstream for this launch: 1 with it in *stream, 0 for the runtime's own, -1 error. */
static int launch_stream(Launcher *self, PyObject *given, void **stream) {
  PyObject *raw;
  if (given != Py_None)
    raw = PyObject_CallFunctionObjArgs(self->explicit_, given, NULL);
  else if (self->stream_getter != Py_None)
    raw = PyObject_CallFunctionObjArgs(self->stream_getter, self->device, NULL);
  else
    raw = PyObject_CallObject(self->current, NULL);
  if (!raw)
    return -1;
  if (raw == Py_None) {
    Py_DECREF(raw);
    return 0;
  }
  int failed = as_pointer(raw, stream);
  Py_DECREF(raw);
  if (failed)
    return -1;
  if (*stream == NULL)
    *stream = (void *)(uintptr_t)1; /* torch's 0: CU_STREAM_LEGACY */
  return 1;
}

static PyObject *launcher_call(Launcher *self, PyObject *args, PyObject *kwargs) {
  PyObject *given = Py_None;
  if (kwargs && PyDict_Size(kwargs)) {
    PyObject *stream = PyDict_GetItemWithError(kwargs, s_stream);
    if (!stream || PyDict_Size(kwargs) != 1)
      return PyErr_Occurred() ? NULL : PyObject_Call(self->general, args, kwargs);
    given = stream;
  }
  Py_ssize_t count = PyTuple_Size(args);
  if (count != self->count)
    return PyObject_Call(self->general, args, kwargs);
  kiln_arg_abi packed[MAX_PARAMS];
  memset(packed, 0, sizeof(kiln_arg_abi) * (size_t)count);
  for (Py_ssize_t i = 0; i < count; ++i) {
    int done = convert(self, i, PyTuple_GetItem(args, i), &packed[i]);
    if (done < 0)
      return NULL;
    if (done == 0)
      return PyObject_Call(self->general, args, kwargs);
  }
  void *stream = NULL;
  int on_stream = launch_stream(self, given, &stream);
  if (on_stream < 0)
    return NULL;
  int32_t status;
  Py_BEGIN_ALLOW_THREADS
  status = on_stream ? self->launch_on(self->kernel, self->grid, packed, (size_t)count, stream)
                     : self->launch(self->kernel, self->grid, packed, (size_t)count);
  Py_END_ALLOW_THREADS
  if (status) {
    PyObject *raised = PyObject_CallFunction(self->fail, "i", (int)status);
    if (!raised)
      return NULL;
    Py_DECREF(raised);
  }
  Py_RETURN_NONE;
}

#define LAUNCHER_OBJECTS(X)                                                                          \
  X(converters) X(tensor_dtypes) X(buffer_type) X(tensor_type) X(wraps) X(slow) X(stream_getter)     \
      X(device) X(current) X(explicit_) X(general) X(fail)

static int launcher_traverse(Launcher *self, visitproc visit, void *arg) {
#define VISIT(field) Py_VISIT(self->field);
  LAUNCHER_OBJECTS(VISIT)
#undef VISIT
  Py_VISIT(Py_TYPE(self));
  return 0;
}

static int launcher_clear(Launcher *self) {
#define CLEAR(field) Py_CLEAR(self->field);
  LAUNCHER_OBJECTS(CLEAR)
#undef CLEAR
  return 0;
}

static void launcher_dealloc(Launcher *self) {
  PyTypeObject *type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  launcher_clear(self);
  freefunc free_fn = (freefunc)PyType_GetSlot(type, Py_tp_free);
  free_fn(self);
  Py_DECREF(type);
}

/* Launchers are made by launcher() alone: one made from Python would have no fields. */
static PyObject *launcher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  (void)type, (void)args, (void)kwargs;
  PyErr_SetString(PyExc_TypeError, "kiln._fastlaunch.Launcher is made by kiln._fastlaunch.launcher()");
  return NULL;
}

static PyType_Slot launcher_slots[] = {
    {Py_tp_doc, (void *)"kernel[grid] written in C: launcher(*args, stream=None); see kiln/_launch.py."},
    {Py_tp_new, launcher_new},
    {Py_tp_call, launcher_call},
    {Py_tp_traverse, launcher_traverse},
    {Py_tp_clear, launcher_clear},
    {Py_tp_dealloc, launcher_dealloc},
    {0, NULL},
};

static PyType_Spec launcher_spec = {
    "kiln._fastlaunch.Launcher", sizeof(Launcher), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, launcher_slots,
};

static PyObject *launcher_type;

/* launcher(launch, launch_on, kernel, (x, y, z), slots, converters, tensor_dtypes,
 *          buffer_type, tensor_type, wraps, slow, stream_getter, device, current,
 *          explicit, general, fail) */
static PyObject *make_launcher(PyObject *module, PyObject *args) {
  (void)module;
  PyObject *launch, *launch_on, *kernel, *grid, *slots, *objects[12];
  if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOO:launcher", &launch, &launch_on, &kernel, &grid, &slots,
                        &objects[0], &objects[1], &objects[2], &objects[3], &objects[4], &objects[5],
                        &objects[6], &objects[7], &objects[8], &objects[9], &objects[10], &objects[11]))
    return NULL;
  Py_ssize_t count = PyBytes_Size(slots);
  if (count < 0)
    return NULL;
  if (count > MAX_PARAMS || !PyTuple_Check(objects[0]) || PyTuple_Size(objects[0]) != count ||
      !PyTuple_Check(objects[1]) || PyTuple_Size(objects[1]) != count || !PyDict_Check(objects[4])) {
    PyErr_SetString(PyExc_ValueError, "launcher: slots, converters and dtypes disagree");
    return NULL;
  }
  unsigned int dims[3];
  if (!PyArg_ParseTuple(grid, "III:grid", &dims[0], &dims[1], &dims[2]))
    return NULL;
  allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)launcher_type, Py_tp_alloc);
  Launcher *self = (Launcher *)alloc((PyTypeObject *)launcher_type, 0);
  if (!self)
    return NULL;
  self->launch = (launch_fn)PyLong_AsVoidPtr(launch);
  self->launch_on = (launch_on_fn)PyLong_AsVoidPtr(launch_on);
  self->kernel = PyLong_AsVoidPtr(kernel);
  self->grid = (kiln_grid_abi){dims[0], dims[1], dims[2]};
  self->count = count;
  const char *codes = PyBytes_AsString(slots);
  for (Py_ssize_t i = 0; i < count; ++i)
    self->slots[i] = (unsigned char)codes[i];
  PyObject **fields[12] = {&self->converters, &self->tensor_dtypes, &self->buffer_type, &self->tensor_type,
                           &self->wraps, &self->slow, &self->stream_getter, &self->device,
                           &self->current, &self->explicit_, &self->general, &self->fail};
  for (int i = 0; i < 12; ++i) {
    Py_INCREF(objects[i]);
    *fields[i] = objects[i];
  }
  if (PyErr_Occurred() || !self->launch || !self->launch_on || !self->kernel) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_ValueError, "launcher: a null entry point or kernel");
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject *)self;
}

static PyMethodDef module_methods[] = {
    {"launcher", make_launcher, METH_VARARGS, "A Launcher for one kernel and grid (kiln/_launch.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "kiln._fastlaunch", "kernel[grid] written in C (see kiln/_launch.py).", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastlaunch(void) {
  const char *names[] = {"_handle", "dtype", "is_contiguous", "data_ptr", "nbytes", "stream"};
  PyObject **interned[] = {&s_handle, &s_dtype, &s_is_contiguous, &s_data_ptr, &s_nbytes, &s_stream};
  for (int i = 0; i < 6; ++i)
    if (!(*interned[i] = PyUnicode_InternFromString(names[i])))
      return NULL;
  PyObject *module = PyModule_Create(&module_def);
  if (!module)
    return NULL;
  launcher_type = PyType_FromSpec(&launcher_spec);
  if (!launcher_type || PyModule_AddObject(module, "Launcher", launcher_type) < 0) {
    Py_XDECREF(launcher_type);
    Py_DECREF(module);
    return NULL;
  }
  Py_INCREF(launcher_type); /* the module's reference was taken by AddObject */
  return module;
}
